/**
 * scanPaths: lstat + xattrs + symlink target + stable read and digest of regular files, for many
 * paths at once on the thread pool. A failing path fails only its own entry.
 */
import { invalidArgument, LayerFsError, type ErrorCode } from '../errors.js';
import { native, type RawScanBatch } from './binding.js';
import { resolveBatchOptions, type BatchOptions, type ContentDigest } from './batch.js';
import { toChunkRefs, type ChunkRef } from './chunker.js';
import { displayPath, toPathBuffer } from './params.js';
import { fromNative } from './wrap.js';
import type { XattrEntry } from './xattr.js';

export interface ScanOptions extends BatchOptions {
  /**
   * Return each regular file's bytes as `data` (default true). Files are read whole, so a batch
   * holds all its files in memory at once: callers size batches. With false, files are streamed
   * through the chunker in 1 MiB pieces and never held whole.
   */
  readData?: boolean;
  /**
   * With readData, regular files larger than this many bytes are not returned whole (no `data`):
   * they are digested by streaming in 1 MiB pieces, like readData: false, so one huge file
   * cannot make a batch huge. Default: no limit (a file over 4 GiB then fails with EFBIG).
   */
  maxDataSize?: number;
  /**
   * With readData, the most bytes of file data one call returns in total; files that would go
   * over are handled like files over maxDataSize (which ones depends on thread timing). Bounds a
   * batch's memory whatever its files' sizes. Default: no limit.
   */
  maxBatchData?: number;
  /**
   * With readData, read files into this Buffer instead of one new Buffer per file: each entry's
   * `data` is a view of it, so the caller decides when the memory is reused (no allocation or
   * garbage per file). Files that do not fit in what is left of it are handled like files over
   * maxDataSize. Do not touch the arena until the promise settles.
   */
  dataArena?: Buffer;
  /**
   * false: files over maxDataSize (or maxBatchData) are not read at all; their entry has
   * metadata and xattrs but no `digest` and no `data`, for callers that read them another way
   * (readChunks, given the entry as `expect`, checks it is still the same file). Default true.
   */
  digestOversize?: boolean;
  /** Collect user.* extended attributes (default true). */
  xattrs?: boolean;
  /** Extra reads when a file changes while it is read, before ERR_FILE_CHANGED (default 2). */
  retries?: number;
}

export type FileKind = 'file' | 'dir' | 'symlink' | 'fifo' | 'chardev' | 'blockdev' | 'socket' | 'unknown';

export interface ScanError {
  /** ERR_NATIVE_IO (a syscall failed; see errno) or ERR_FILE_CHANGED (kept changing). */
  code: Extract<ErrorCode, 'ERR_NATIVE_IO' | 'ERR_FILE_CHANGED' | 'ERR_NATIVE'>;
  /** errno name such as 'ENOENT'; absent for ERR_FILE_CHANGED. */
  errno?: string;
  /** The path as text (non-UTF-8 bytes are replaced), for messages. */
  path: string;
  message: string;
}

export interface ScanEntryOk {
  /** The path exactly as passed in. */
  path: string | Buffer;
  error?: undefined;
  kind: FileKind;
  /** st_mode & 0o7777: permission bits with setuid, setgid and sticky. */
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  dev: bigint;
  nlink: number;
  rdev: number;
  /** user.* attributes; empty when options.xattrs is false. */
  xattrs: XattrEntry[];
  /** Symlinks only: the target bytes (never followed). */
  linkTarget?: Buffer;
  /**
   * Regular files (see ContentDigest); metadata is from the same open file as the bytes. Absent
   * for a file over maxDataSize with digestOversize: false.
   */
  digest?: ContentDigest;
  /**
   * Regular files with readData, up to maxDataSize: the bytes (not copied: owned by this Buffer,
   * or a view of options.dataArena).
   */
  data?: Buffer;
}

export interface ScanEntryFailed {
  path: string | Buffer;
  error: ScanError;
}

export type ScanEntry = ScanEntryOk | ScanEntryFailed;

export type { ChunkRef };

/** Index = the addon's kind code (native/napi_scan_results.cc); 0 is a failed entry. */
const KINDS: FileKind[] = ['unknown', 'file', 'dir', 'symlink', 'fifo', 'chardev', 'blockdev', 'socket', 'unknown'];

export async function scanPaths(paths: (string | Buffer)[], opts?: ScanOptions): Promise<ScanEntry[]> {
  return (await scanBatch(paths, opts)).entries();
}

/** The addon's arguments of a scan: paths as bytes, options resolved. */
function scanArgs(paths: (string | Buffer)[], opts: ScanOptions | undefined) {
  const buffers = paths.map((p, i) => toPathBuffer(p, `paths[${i}]`));
  const o = (opts ?? {}) as ScanOptions;
  const raw = resolveBatchOptions(opts, { readData: o.readData, maxDataSize: o.maxDataSize, maxBatchData: o.maxBatchData, dataArena: o.dataArena, digestOversize: o.digestOversize, xattrs: o.xattrs, retries: o.retries });
  return { buffers, o, raw };
}

/**
 * scanPaths without building every entry at once: the batch keeps the addon's columns and builds
 * entry i when asked. A caller that stores entries one by one (an import) then holds one entry's
 * objects at a time instead of a whole batch's, scanned ahead of use.
 */
export async function scanBatch(paths: (string | Buffer)[], opts?: ScanOptions): Promise<ScanBatch> {
  if (!Array.isArray(paths)) throw invalidArgument('paths must be an array of strings or Buffers', { argument: 'paths' });
  const { buffers, o, raw } = scanArgs(paths, opts);
  let b: RawScanBatch;
  try {
    b = await native.scanPaths(buffers, raw);
  } catch (e) {
    throw fromNative(e);
  }
  return new ScanBatch(paths, b, o.dataArena);
}

/** A scan started by startScan, running on the addon's threads. */
export interface PendingScan {
  /** Waits for the scan on this thread (once); the batch as scanBatch resolves it. */
  take(): ScanBatch;
}

/**
 * scanBatch for a caller that cannot return to the event loop but has other work meanwhile (the
 * mount daemon's serving thread inside a commit): the scan starts now on the addon's threads and
 * take() waits for it where it is. A handle never taken is stopped when it is collected.
 */
export function startScan(paths: (string | Buffer)[], opts?: ScanOptions): PendingScan {
  if (!Array.isArray(paths)) throw invalidArgument('paths must be an array of strings or Buffers', { argument: 'paths' });
  const { buffers, o, raw } = scanArgs(paths, opts);
  let handle: object;
  try {
    handle = native.scanPathsStart(buffers, raw);
  } catch (e) {
    throw fromNative(e);
  }
  return {
    take(): ScanBatch {
      let b: RawScanBatch;
      try {
        b = native.scanPathsTake(handle);
      } catch (e) {
        throw fromNative(e);
      }
      return new ScanBatch(paths, b, o.dataArena);
    },
  };
}

/** Indexes `k` of `index` grouped by the entry they belong to (few: xattrs, symlinks). */
function byEntry(index: Uint32Array): Map<number, number[]> {
  const m = new Map<number, number[]>();
  for (let k = 0; k < index.length; k++) {
    const list = m.get(index[k]!);
    if (list) list.push(k);
    else m.set(index[k]!, [k]);
  }
  return m;
}

/** One scanned batch: `count` entries, entry i built from the addon's columns on demand. */
export class ScanBatch {
  readonly count: number;
  /** Where entry i's chunks start in chunkLengths (and, times 32, in chunkIds). */
  private readonly chunkStart: Uint32Array;
  private readonly xattrs: Map<number, number[]>;
  private readonly links: Map<number, number[]>;
  private readonly errors: Map<number, [number, string, string | undefined, string]>;

  constructor(
    private readonly paths: (string | Buffer)[],
    private readonly b: RawScanBatch,
    private readonly arena: Buffer | undefined,
  ) {
    this.count = paths.length;
    this.chunkStart = new Uint32Array(this.count);
    for (let i = 0, at = 0; i < this.count; i++) {
      this.chunkStart[i] = at;
      if (b.digestKind[i] !== 0) at += b.chunkCounts[i]!;
    }
    this.xattrs = byEntry(b.xattrIndex);
    this.links = byEntry(b.linkIndex);
    this.errors = new Map(b.errors.map((e) => [e[0], e]));
  }

  /** Entry i, a new object each call (undefined only for a slot the addon left empty). */
  entry(i: number): ScanEntry | undefined {
    const b = this.b;
    const path = this.paths[i]!;
    const failed = this.errors.get(i);
    if (failed) {
      const [, code, errno, message] = failed;
      const error: ScanError = { code: code as ScanError['code'], path: displayPath(path), message: `${displayPath(path)}: ${message}` };
      if (errno !== undefined) error.errno = errno;
      return { path, error };
    }
    if (b.kind[i] === 0) return undefined;
    const e: ScanEntryOk = {
      path,
      kind: KINDS[b.kind[i]!]!,
      mode: b.mode[i]!,
      uid: b.uid[i]!,
      gid: b.gid[i]!,
      size: b.size[i]!,
      mtimeNs: b.mtimeNs[i]!,
      ctimeNs: b.ctimeNs[i]!,
      ino: b.ino[i]!,
      dev: b.dev[i]!,
      nlink: b.nlink[i]!,
      rdev: b.rdev[i]!,
      xattrs: [],
    };
    const dk = b.digestKind[i]!;
    if (dk !== 0) {
      const n = b.chunkCounts[i]!;
      const at = this.chunkStart[i]!;
      const chunks = n === 0 ? [] : toChunkRefs(b.chunkLengths.subarray(at, at + n), b.chunkIds.subarray(at * 32, (at + n) * 32));
      e.digest = { chunked: dk === 2, contentId: b.contentIds.subarray(i * 32, i * 32 + 32), chunks };
    }
    const at = b.arenaOffset[i]!;
    const data = at >= 0 ? this.arena!.subarray(at, at + e.size) : b.data[i];
    if (data) e.data = data;
    for (const k of this.xattrs.get(i) ?? []) e.xattrs.push({ name: b.xattrNames[k]!, value: b.xattrValues.subarray(k === 0 ? 0 : b.xattrEnds[k - 1]!, b.xattrEnds[k]!) });
    const link = this.links.get(i);
    if (link) {
      const k = link[link.length - 1]!;
      e.linkTarget = b.linkTargets.subarray(k === 0 ? 0 : b.linkEnds[k - 1]!, b.linkEnds[k]!);
    }
    return e;
  }

  /**
   * Regular files of at most `maxBytes` (and not empty) that came back without their bytes: over
   * the batch's data budget or its arena, read by the caller some other way.
   */
  unread(maxBytes: number): number[] {
    const b = this.b;
    const out: number[] = [];
    for (let i = 0; i < this.count; i++) {
      if (b.kind[i] === 1 && b.size[i]! > 0 && b.size[i]! <= maxBytes && b.arenaOffset[i]! < 0 && !b.data[i] && !this.errors.has(i)) out.push(i);
    }
    return out;
  }

  /** Every entry, as scanPaths returns them. */
  entries(): ScanEntry[] {
    const out = new Array<ScanEntry>(this.count);
    for (let i = 0; i < this.count; i++) {
      const e = this.entry(i);
      if (e !== undefined) out[i] = e;
    }
    return out;
  }
}

/** Whether two scans saw the same file unchanged (device, inode, size and times). */
export function sameFile(a: ScanEntryOk, b: ScanEntryOk): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/** Like scanPaths, but throws a LayerFsError (code of the entry, with path and errno) for the first failed entry. */
export async function scanPathsOrThrow(paths: (string | Buffer)[], opts?: ScanOptions): Promise<ScanEntryOk[]> {
  const entries = await scanPaths(paths, opts);
  for (const e of entries) {
    if (e.error) {
      const details: { path: string; errno?: string } = { path: e.error.path };
      if (e.error.errno !== undefined) details.errno = e.error.errno;
      throw new LayerFsError(e.error.code, e.error.message, details);
    }
  }
  return entries as ScanEntryOk[];
}
