/**
 * What names an object: its kind (the hash domain) and its id, BLAKE3(domain tag ‖ 0x00 ‖
 * canonical bytes); and the index row that says where its stored bytes are. A leaf of the
 * object storage (object-writer.ts, object-reader.ts), so everything may import it.
 */
import { objectId } from '../native/hash.js';

export enum ObjectKind {
  /** Whole content of a regular file below the chunking threshold. */
  Blob = 1,
  /** One FastCDC chunk of a large file. */
  Chunk = 2,
  /** A node of a large file's extent tree. */
  Extents = 3,
  /** A page of a namespace tree (inode table or directory). */
  Page = 4,
  /** A filesystem root. */
  Root = 5,
  /**
   * A zstd dictionary trained on the Store's small objects (format 10): frames compressed with
   * it name it in their index rows' `base`, as a delta names its bases.
   */
  Dictionary = 6,
}

export const DOMAIN_TAGS: Record<ObjectKind, string> = {
  [ObjectKind.Blob]: 'layerfs/blob/v1',
  [ObjectKind.Chunk]: 'layerfs/chunk/v1',
  [ObjectKind.Extents]: 'layerfs/extents/v1',
  [ObjectKind.Page]: 'layerfs/page/v1',
  [ObjectKind.Root]: 'layerfs/root/v1',
  [ObjectKind.Dictionary]: 'layerfs/dictionary/v1',
};

export function idOf(kind: ObjectKind, data: Uint8Array): Buffer {
  return objectId(DOMAIN_TAGS[kind], data);
}

/** The base ids of a delta (or a dictionary frame): its `base` column holds 32-byte ids, concatenated. */
export function deltaBases(base: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i + 32 <= base.length; i += 32) out.push(base.subarray(i, i + 32));
  return out;
}

export interface WriteStats {
  objectsInserted: number;
  objectsReused: number;
  bytesInserted: number;
  bytesReused: number;
}

export function emptyWriteStats(): WriteStats {
  return { objectsInserted: 0, objectsReused: 0, bytesInserted: 0, bytesReused: 0 };
}

/** An object's index row, without its id: where its stored bytes are and how they decode. */
export interface Locator {
  kind: number;
  size: number;
  codec: number;
  pack: number;
  offset: number;
  length: number;
  at: number;
  base: Buffer | null;
}
