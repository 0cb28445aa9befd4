/**
 * walkTree: readdir + lstat of a whole tree on the addon's thread pool, as typed arrays (one
 * slot per entry) instead of one object per path.
 *
 * Order (the same as lib/store/import/walk.ts): entry 0 is the root; a directory's children are
 * listed contiguously, sorted by name bytes, and directories are visited depth-first in that
 * order, so a parent always precedes its children and the order depends only on the tree.
 * Symlinks are never followed (a root that is not a directory is ENOTDIR). Entries that vanish
 * while the walk runs are simply absent. An unreadable directory fails the whole walk with
 * LayerFsError ERR_NATIVE_IO (details: path, errno, syscall).
 */
import { invalidArgument } from '../errors.js';
import { native, type RawWalkAgainst, type RawWalkResult } from './binding.js';
import { MAX_THREADS } from './batch.js';
import { optionalInt, toPathBuffer } from './params.js';
import { fromNative } from './wrap.js';

/** Kind codes of walk entries: the inode kinds of docs/FORMAT.md, plus socket and unknown. */
export const WalkKind = {
  Unknown: 0,
  File: 1,
  Dir: 2,
  Symlink: 3,
  Fifo: 4,
  CharDev: 5,
  BlockDev: 6,
  Socket: 7,
} as const;
export type WalkKind = (typeof WalkKind)[keyof typeof WalkKind];

export const WALK_KIND_NAMES = ['unknown', 'file', 'dir', 'symlink', 'fifo', 'chardev', 'blockdev', 'socket'] as const;

/** The addon's result as it is: its fields are documented on RawWalkResult. */
export type WalkResult = RawWalkResult;

export interface WalkOptions {
  /** Threads reading directories at once, 1..64 (default: the core count). */
  threads?: number;
}

function prepare(root: string | Buffer, opts: WalkOptions | undefined): { path: Buffer; threads: number } {
  if (opts !== undefined && (opts === null || typeof opts !== 'object')) throw invalidArgument('options must be an object', { argument: 'options' });
  let path = toPathBuffer(root, 'root');
  // No trailing slash (but keep "/"), so every path the walk builds is canonical.
  let end = path.length;
  while (end > 1 && path[end - 1] === 0x2f) end--;
  if (end !== path.length) path = path.subarray(0, end);
  return { path, threads: optionalInt(opts?.threads, 'options.threads', 1, MAX_THREADS, native.defaultThreads) };
}

function wrapError(e: unknown): Error {
  const path = (e as { path?: unknown })?.path;
  return fromNative(e, typeof path === 'string' ? { path } : {});
}

export async function walkTree(root: string | Buffer, opts?: WalkOptions): Promise<WalkResult> {
  const { path, threads } = prepare(root, opts);
  let r: RawWalkResult;
  try {
    r = (await native.walkTree(path, threads)) as RawWalkResult;
  } catch (e) {
    throw wrapError(e);
  }
  return r;
}

/**
 * The walk compared with an earlier one (a Workspace's stat cache) in native code, entry by
 * entry in walk order:
 * - `same`: every path, kind, inode, mode, size and time is unchanged; nothing is copied out;
 * - `stats`: the same paths, kinds and inodes, and `changed` lists the entries (indices valid in
 *   both) whose mode, size or times differ, with their new values;
 * - `walk`: paths, kinds or inodes moved; the whole new walk.
 */
export type WalkAgainst =
  | { kind: 'same'; count: number }
  | { kind: 'stats'; count: number; changed: Uint32Array; mode: Uint32Array; size: BigInt64Array; mtimeNs: BigInt64Array; ctimeNs: BigInt64Array }
  | { kind: 'walk'; walk: WalkResult };

function against(r: RawWalkResult | RawWalkAgainst): WalkAgainst {
  if ('same' in r) return { kind: 'same', count: r.count };
  if ('changed' in r) return { kind: 'stats', ...r };
  return { kind: 'walk', walk: r };
}

export async function walkTreeAgainst(root: string | Buffer, old: WalkResult, opts?: WalkOptions): Promise<WalkAgainst> {
  const { path, threads } = prepare(root, opts);
  try {
    return against(await native.walkTree(path, threads, old));
  } catch (e) {
    throw wrapError(e);
  }
}

export function walkTreeAgainstSync(root: string | Buffer, old: WalkResult, opts?: WalkOptions): WalkAgainst {
  const { path, threads } = prepare(root, opts);
  try {
    return against(native.walkTreeSync(path, threads, old));
  } catch (e) {
    throw wrapError(e);
  }
}

/** The same walk, blocking the calling thread (which works too) until it is done. */
export function walkTreeSync(root: string | Buffer, opts?: WalkOptions): WalkResult {
  const { path, threads } = prepare(root, opts);
  try {
    return native.walkTreeSync(path, threads) as RawWalkResult;
  } catch (e) {
    throw wrapError(e);
  }
}

/** Entry i's name (a view into w.names, not a copy). */
export function walkName(w: Pick<WalkResult, 'names' | 'nameOffsets'>, i: number): Buffer {
  return w.names.subarray(w.nameOffsets[i]!, w.nameOffsets[i + 1]!);
}

/** Entry i's path relative to the root (empty for the root). */
export function walkRelPath(w: Pick<WalkResult, 'names' | 'nameOffsets' | 'parent'>, i: number): Buffer {
  const parts: Buffer[] = [];
  for (let k = i; k > 0; k = w.parent[k]!) parts.push(walkName(w, k));
  if (parts.length <= 1) return parts.length === 0 ? Buffer.alloc(0) : Buffer.from(parts[0]!);
  const out: Buffer[] = [];
  for (let k = parts.length - 1; k >= 0; k--) {
    out.push(parts[k]!);
    if (k > 0) out.push(SLASH);
  }
  return Buffer.concat(out);
}

const SLASH = Buffer.from('/');
