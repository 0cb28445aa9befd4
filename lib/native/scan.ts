/**
 * scanPaths: lstat + xattrs + symlink target + stable read and digest of regular files, for many
 * paths at once on the thread pool. A failing path fails only its own entry.
 */
import { invalidArgument, LayerFsError, type ErrorCode } from '../errors.js';
import { native } from './binding.js';
import { resolveBatchOptions, toContentDigest, type BatchOptions, type ContentDigest } from './batch.js';
import type { ChunkRef } from './chunker.js';
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
  /** Regular files only (see ContentDigest); metadata is from the same open file as the bytes. */
  digest?: ContentDigest;
  /** Regular files with readData: the bytes (not copied: owned by this Buffer). */
  data?: Buffer;
}

export interface ScanEntryFailed {
  path: string | Buffer;
  error: ScanError;
}

export type ScanEntry = ScanEntryOk | ScanEntryFailed;

export type { ChunkRef };

export async function scanPaths(paths: (string | Buffer)[], opts?: ScanOptions): Promise<ScanEntry[]> {
  if (!Array.isArray(paths)) throw invalidArgument('paths must be an array of strings or Buffers', { argument: 'paths' });
  const buffers = paths.map((p, i) => toPathBuffer(p, `paths[${i}]`));
  const o = (opts ?? {}) as ScanOptions;
  const raw = resolveBatchOptions(opts, { readData: o.readData, xattrs: o.xattrs, retries: o.retries });
  let results;
  try {
    results = await native.scanPaths(buffers, raw);
  } catch (e) {
    throw fromNative(e);
  }
  return results.map((r, i): ScanEntry => {
    const path = paths[i]!;
    if (r.error) {
      const error: ScanError = {
        code: r.error.code as ScanError['code'],
        path: displayPath(path),
        message: `${displayPath(path)}: ${r.error.message}`,
      };
      if (r.error.errno !== undefined) error.errno = r.error.errno;
      return { path, error };
    }
    const e: ScanEntryOk = {
      path,
      kind: r.kind as FileKind,
      mode: r.mode!,
      uid: r.uid!,
      gid: r.gid!,
      size: r.size!,
      mtimeNs: r.mtimeNs!,
      ctimeNs: r.ctimeNs!,
      ino: r.ino!,
      dev: r.dev!,
      nlink: r.nlink!,
      rdev: r.rdev!,
      xattrs: r.xattrs ?? [],
    };
    if (r.linkTarget) e.linkTarget = r.linkTarget;
    if (r.digest) e.digest = toContentDigest(r.digest);
    if (r.data) e.data = r.data;
    return e;
  });
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
