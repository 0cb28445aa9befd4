/**
 * Reading a file's content from an untrusted Store: the inode's recorded size is the truth, and
 * every extent node and chunk on the way must agree with it. Each node's lengths add up to what
 * its parent (or, at the top, the inode's size) says, no length is zero, each child is exactly
 * one level down, and each chunk has the length its entry gives. So a read yields exactly
 * `size` bytes, whatever the tree claims, and a forged tree whose subtrees fan out to gigabytes
 * is ERR_CORRUPT at its first node instead of a stream of bytes.
 */
import { LayerFsError } from '../../errors.js';
import { toHex } from '../../format/hex.js';
import { ObjectKind } from '../object-id.js';
import type { ObjectReader } from '../object-reader.js';
import { decodeExtentNode, type ExtentNode } from './extents.js';

function corrupt(message: string, id: Buffer): LayerFsError {
  return new LayerFsError('ERR_CORRUPT', message, { id: toHex(id), hint: 'the Store is damaged or forged; run layerfs verify' });
}

/** Checks a decoded node against the bytes its parent entry gives it (`parentLevel` null at the top). */
export function checkExtentNode(node: ExtentNode, id: Buffer, expected: number, parentLevel: number | null): ExtentNode {
  if (parentLevel !== null && node.level !== parentLevel - 1) throw corrupt(`extent node ${toHex(id)} is at level ${node.level} under a node of level ${parentLevel}`, id);
  let sum = 0;
  for (const l of node.lengths) {
    if (l <= 0) throw corrupt(`extent node ${toHex(id)} has an empty extent`, id);
    sum += l;
  }
  if (sum !== expected) throw corrupt(`extent node ${toHex(id)} holds ${sum} bytes where ${expected} are recorded`, id);
  return node;
}

/** Loads and checks an extent node (see checkExtentNode). */
export function loadExtentNode(objects: ObjectReader, id: Buffer, expected: number, parentLevel: number | null): ExtentNode {
  return checkExtentNode(decodeExtentNode(objects.get(id, ObjectKind.Extents), `extent node ${toHex(id)}`), id, expected, parentLevel);
}

/** A chunk or blob must have exactly the length recorded for it. */
export function checkLength(data: Buffer, expected: number, id: Buffer, what: 'chunk' | 'blob'): Buffer {
  if (data.length !== expected) throw corrupt(`${what} ${toHex(id)} has ${data.length} bytes where ${expected} are recorded`, id);
  return data;
}
