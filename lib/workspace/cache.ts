/**
 * The stat cache of a materialized Workspace (table workspace_entries): what every path looked
 * like when the Workspace last matched a stored state, with its serial. One row per Workspace
 * holding packed arrays (docs/FORMAT.md): loading 100,000 entries is one row read and a few
 * typed-array views, where one row per path cost ~360 ms (measured; docs/DESIGN.md).
 */
import { endianness } from 'node:os';
import { LayerFsError } from '../errors.js';
import type { WalkResult } from '../native/index.js';
import type { Store } from '../store/index.js';

/** A walk (lib/native walkTree: same order, same arrays) plus the serial of every entry. */
export interface StatCache extends WalkResult {
  serial: Uint32Array;
  /** High-water mark: no serial above it was ever used by this Workspace; new inodes get more. */
  maxSerial: number;
}

const LE = endianness() === 'LE';

/**
 * The sections of the `data` blob, in order. Widest first, so every section is naturally
 * aligned when the blob is; all integers little-endian.
 */
const SECTIONS = [
  { key: 'ino', bytes: 8, extra: 0 },
  { key: 'size', bytes: 8, extra: 0 },
  { key: 'mtimeNs', bytes: 8, extra: 0 },
  { key: 'ctimeNs', bytes: 8, extra: 0 },
  { key: 'serial', bytes: 4, extra: 0 },
  { key: 'parent', bytes: 4, extra: 0 },
  { key: 'mode', bytes: 4, extra: 0 },
  { key: 'nameOffsets', bytes: 4, extra: 1 },
  { key: 'kind', bytes: 1, extra: 0 },
] as const;

type ArrayKey = (typeof SECTIONS)[number]['key'];
type Arrays = Pick<StatCache, ArrayKey>;

function view(key: ArrayKey, buf: ArrayBuffer, off: number, n: number): Arrays[ArrayKey] {
  switch (key) {
    case 'ino':
      return new BigUint64Array(buf, off, n);
    case 'size':
    case 'mtimeNs':
    case 'ctimeNs':
      return new BigInt64Array(buf, off, n);
    case 'serial':
    case 'mode':
    case 'nameOffsets':
      return new Uint32Array(buf, off, n);
    case 'parent':
      return new Int32Array(buf, off, n);
    case 'kind':
      return new Uint8Array(buf, off, n);
  }
}

function swap(b: Buffer, bytes: number): void {
  if (bytes === 8) b.swap64();
  else if (bytes === 4) b.swap32();
}

export function encodeCache(c: StatCache): Buffer {
  let total = 0;
  for (const s of SECTIONS) total += (c.count + s.extra) * s.bytes;
  total += c.names.length;
  const out = Buffer.allocUnsafeSlow(total);
  let off = 0;
  for (const s of SECTIONS) {
    const a = c[s.key];
    const src = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
    src.copy(out, off);
    if (!LE) swap(out.subarray(off, off + src.length), s.bytes);
    off += src.length;
  }
  c.names.copy(out, off);
  return out;
}

export function decodeCache(count: number, maxSerial: number, data: Buffer): StatCache {
  // Views need aligned memory of our own: copy unless the blob is already both.
  let buf = data;
  if (buf.byteOffset % 8 !== 0 || !LE) {
    buf = Buffer.allocUnsafeSlow(data.length);
    data.copy(buf);
  }
  const arrays = {} as Record<ArrayKey, Arrays[ArrayKey]>;
  let off = 0;
  for (const s of SECTIONS) {
    const n = count + s.extra;
    if (off + n * s.bytes > buf.length) throw corrupt();
    if (!LE) swap(buf.subarray(off, off + n * s.bytes), s.bytes);
    arrays[s.key] = view(s.key, buf.buffer as ArrayBuffer, buf.byteOffset + off, n);
    off += n * s.bytes;
  }
  const a = arrays as Arrays;
  const names = buf.subarray(off);
  if (count < 1 || a.nameOffsets[0] !== 0 || a.nameOffsets[count] !== names.length || a.parent[0] !== -1) throw corrupt();
  return { count, names, ...a, maxSerial };
}

function corrupt(): LayerFsError {
  return new LayerFsError('ERR_CORRUPT', 'the stat cache of this Workspace is damaged', { hint: 'end the Workspace (commit first if it has changes) and create it again' });
}

export function loadCache(store: Store, workspaceId: Buffer): StatCache {
  const row = store.db.prepare('SELECT count, max_serial AS maxSerial, data FROM workspace_entries WHERE workspace_id = ?').get(workspaceId) as
    | { count: number; maxSerial: number; data: Buffer }
    | undefined;
  if (!row) throw corrupt();
  return decodeCache(row.count, row.maxSerial, row.data);
}

/** Replaces the Workspace's cache, inside the caller's transaction. */
export function saveCache(store: Store, workspaceId: Buffer, c: StatCache): void {
  store.db
    .prepare('INSERT OR REPLACE INTO workspace_entries (workspace_id, count, max_serial, data) VALUES (?, ?, ?, ?)')
    .run(workspaceId, c.count, c.maxSerial, encodeCache(c));
}
