/**
 * History ids. Layer and Commit ids are derived from their parents and root, so the same history
 * gives the same ids; LayerStack, Branch and Workspace ids are random UUIDv7 (time-ordered).
 */
import { randomBytes } from 'node:crypto';
import { objectId } from '../native/hash.js';

export const LAYER_TAG = 'layerfs/layer/v1';
export const COMMIT_TAG = 'layerfs/commit/v1';
/** Commits from format 4 on: the id also covers the note and the creation time (docs/FORMAT.md). */
export const COMMIT_TAG_V2 = 'layerfs/commit/v2';

const ABSENT = Buffer.from([0]);
const PRESENT = Buffer.from([1]);

function opt(id: Buffer | null): Buffer[] {
  return id ? [PRESENT, id] : [ABSENT];
}

export function layerId(layerStackId: Buffer, parent: Buffer | null, root: Buffer): Buffer {
  return objectId(LAYER_TAG, layerStackId, ...opt(parent), root);
}

export function commitId(root: Buffer, parent: Buffer | null, baseLayer: Buffer): Buffer {
  return objectId(COMMIT_TAG, root, ...opt(parent), baseLayer);
}

/** A length-prefixed (u32 BE) UTF-8 field: no field can run into the next. */
function field(text: string): Buffer[] {
  const b = Buffer.from(text, 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.length);
  return [len, b];
}

/**
 * A format-4 Commit id: root, parent and base Layer as in v1, then the creation time (u64 BE ms),
 * author, message and canonical metadata JSON ('' for none), each length-prefixed.
 */
export function commitIdV2(root: Buffer, parent: Buffer | null, baseLayer: Buffer, createdMs: number, author: string, message: string, metadataJson: string): Buffer {
  const t = Buffer.alloc(8);
  t.writeBigUInt64BE(BigInt(createdMs));
  return objectId(COMMIT_TAG_V2, root, ...opt(parent), baseLayer, t, ...field(author), ...field(message), ...field(metadataJson));
}

export function uuidv7(): Buffer {
  const b = randomBytes(16);
  const ms = BigInt(Date.now());
  b.writeUIntBE(Number(ms >> 16n), 0, 4);
  b.writeUInt16BE(Number(ms & 0xffffn), 4);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return b;
}
