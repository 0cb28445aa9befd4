/**
 * Extent trees: a large file's content as an ordered list of (chunk id, length), grouped into
 * nodes whose boundaries are chosen by the chunk ids themselves, so equal content gives equal
 * nodes and an edit shares every node away from the changed chunks.
 */
import { ByteReader, ByteWriter } from '../../format/bytes.js';
import { LayerFsError } from '../../errors.js';

export interface Extent {
  id: Buffer;
  length: number;
}

export interface ExtentNode {
  level: number;
  /** chunk ids at level 0, child node ids above */
  ids: Buffer[];
  /** chunk lengths at level 0, subtree byte counts above */
  lengths: number[];
}

const BOUNDARY_MASK = 63;

function boundary(level: number, id: Buffer): boolean {
  return ((id[level % 32]! ^ id[31 - (level % 32)]!) & BOUNDARY_MASK) === 0;
}

export function encodeExtentNode(n: ExtentNode): Buffer {
  const w = new ByteWriter(8 + n.ids.length * 37);
  w.u8(n.level).uv(n.ids.length);
  for (let i = 0; i < n.ids.length; i++) w.bytes(n.ids[i]!).uv(n.lengths[i]!);
  return w.finish();
}

export function decodeExtentNode(data: Buffer, what: string): ExtentNode {
  const r = new ByteReader(data, what);
  const level = r.u8();
  const count = r.count(33);
  if (count === 0) throw new LayerFsError('ERR_CORRUPT', `${what}: empty extent node`);
  const ids: Buffer[] = new Array(count);
  const lengths: number[] = new Array(count);
  for (let i = 0; i < count; i++) {
    ids[i] = r.bytes(32);
    lengths[i] = r.uv();
  }
  r.end();
  return { level, ids, lengths };
}

/** Builds the tree bottom-up; `save` stores a node and returns its id. Returns the root id. */
export function buildExtentTree(extents: Extent[], save: (node: Buffer) => Buffer): Buffer {
  if (extents.length === 0) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'an extent tree needs at least one extent');
  let level = 0;
  let ids = extents.map((e) => e.id);
  let lengths = extents.map((e) => e.length);
  for (;;) {
    const nextIds: Buffer[] = [];
    const nextLengths: number[] = [];
    let start = 0;
    for (let i = 0; i < ids.length; i++) {
      if (boundary(level, ids[i]!) || i === ids.length - 1) {
        const node = { level, ids: ids.slice(start, i + 1), lengths: lengths.slice(start, i + 1) };
        nextIds.push(save(encodeExtentNode(node)));
        nextLengths.push(node.lengths.reduce((a, b) => a + b, 0));
        start = i + 1;
      }
    }
    if (nextIds.length === 1) return nextIds[0]!;
    ids = nextIds;
    lengths = nextLengths;
    level++;
  }
}
