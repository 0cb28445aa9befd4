/**
 * Range reads: bytes [offset, offset + length) of a regular file, loading only the extent nodes
 * on the way and the chunks that overlap the range. Extent entries above level 0 carry their
 * subtree's byte count (docs/FORMAT.md, "Extent tree"), so whole subtrees before the range are
 * skipped unread, and the walk stops at the first entry past its end.
 */
import { LayerFsError } from '../errors.js';
import { ObjectKind } from './object-id.js';
import type { ObjectReader } from './object-reader.js';
import { checkLength, loadExtentNode } from './tree/extent-check.js';
import type { ExtentNode } from './tree/extents.js';
import { ContentForm, InodeKind, type Inode } from './tree/inode.js';

export interface ByteRange {
  /** First byte to read (default 0). Past the end of the file reads nothing. */
  offset?: number;
  /** Most bytes to read (default: to the end of the file). */
  length?: number;
}

function checkCount(v: number | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `${name} must be a non-negative integer, got ${String(v)}`, { argument: name });
  }
  return v;
}

/** The range clamped to the file: [start, end) with 0 <= start <= end <= size. */
export function clampRange(size: number, range: ByteRange): { start: number; end: number } {
  const offset = checkCount(range.offset, 'offset') ?? 0;
  const length = checkCount(range.length, 'length');
  const start = Math.min(offset, size);
  const end = length === undefined ? size : Math.min(size, start + length);
  return { start, end };
}

/** The pieces of a file's content in `range`, in order (empty pieces are never yielded). */
export function* readRange(objects: ObjectReader, file: Inode, range: ByteRange): Generator<Buffer> {
  if (file.kind !== InodeKind.File) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'not a regular file');
  const { start, end } = clampRange(file.size, range);
  if (start >= end || file.form === ContentForm.None) return;
  if (file.form === ContentForm.Whole) {
    yield checkLength(objects.get(file.content!, ObjectKind.Blob), file.size, file.content!, 'blob').subarray(start, end);
    return;
  }
  // Every node on the way is checked against the length its parent records (the top against
  // the inode's size), so nothing past `size` is ever yielded (extent-check.ts).
  // pos: file offset of the node being walked. Returns false once past the end of the range.
  function* walk(node: ExtentNode, pos: number): Generator<Buffer, boolean> {
    for (let i = 0; i < node.ids.length; i++) {
      if (pos >= end) return false;
      const len = node.lengths[i]!;
      if (pos + len > start) {
        if (node.level === 0) {
          const chunk = checkLength(objects.get(node.ids[i]!, ObjectKind.Chunk), len, node.ids[i]!, 'chunk');
          yield chunk.subarray(Math.max(0, start - pos), Math.min(len, end - pos));
        } else if (!(yield* walk(loadExtentNode(objects, node.ids[i]!, len, node.level), pos))) return false;
      }
      pos += len;
    }
    return true;
  }
  yield* walk(loadExtentNode(objects, file.content!, file.size, null), 0);
}
