/**
 * The one loader of the compiled addon. node-gyp-build looks in build/Release (cmake-js and
 * node-gyp both write there) and then in prebuilds/<platform>-<arch>/. The package root is found
 * by walking up to the package.json named "layerfs", because this file runs both from
 * lib/native/ (tsx) and from dist/lib/native/ (compiled).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LayerFsError } from '../errors.js';

/** Chunker parameters in the shape the addon reads (all fields present). */
export interface RawParams {
  minSize: number;
  avgSize: number;
  maxSize: number;
  normalization: number;
}

export interface RawBatchOptions {
  params: RawParams | undefined;
  threads: number;
  smallFileThreshold: number;
  readData: boolean;
  maxDataSize: number;
  maxBatchData: number;
  dataArena?: Uint8Array;
  digestOversize: boolean;
  xattrs: boolean;
  retries: number;
}

export interface RawDigest {
  chunked: boolean;
  contentId: Buffer;
  chunkLengths: Uint32Array;
  chunkIds: Buffer;
}

/**
 * A scanPaths batch as columns (native/napi_scan_results.cc): entry i's fields are element i of
 * each typed array; kind 0 marks a failed entry, listed in `errors`. Xattrs and link targets are
 * flat lists tagged with their entry index; chunk lists are concatenated in entry order.
 */
export interface RawScanBatch {
  kind: Uint8Array;
  mode: Uint32Array;
  uid: Uint32Array;
  gid: Uint32Array;
  size: Float64Array;
  nlink: Float64Array;
  rdev: Float64Array;
  mtimeNs: BigInt64Array;
  ctimeNs: BigInt64Array;
  ino: BigUint64Array;
  dev: BigUint64Array;
  /** [index, code, errno | undefined, message] */
  errors: [number, string, string | undefined, string][];
  xattrIndex: Uint32Array;
  xattrNames: string[];
  xattrValues: Buffer;
  xattrEnds: Uint32Array;
  linkIndex: Uint32Array;
  linkTargets: Buffer;
  linkEnds: Uint32Array;
  /** 0 no digest, 1 blob, 2 chunked */
  digestKind: Uint8Array;
  contentIds: Buffer;
  chunkCounts: Uint32Array;
  chunkLengths: Uint32Array;
  chunkIds: Buffer;
  data: (Buffer | undefined)[];
  /** With options.dataArena: where entry i's bytes are in the arena (-1: none). */
  arenaOffset: Float64Array;
}

/** walkTree's result: typed arrays, one slot per entry (see lib/native/walk.ts). */
export interface RawWalkResult {
  /** Number of entries, the root included. */
  count: number;
  /** Every name, concatenated (the root's is empty): name i is names[nameOffsets[i], nameOffsets[i + 1]). */
  names: Buffer;
  nameOffsets: Uint32Array;
  /** Index of the parent directory's entry; -1 for the root. */
  parent: Int32Array;
  /** WalkKind codes (lib/native/walk.ts). */
  kind: Uint8Array;
  /** st_mode & 0o7777. */
  mode: Uint32Array;
  ino: BigUint64Array;
  size: BigInt64Array;
  mtimeNs: BigInt64Array;
  ctimeNs: BigInt64Array;
}

/** walkTree compared with a walk-shaped cache: `same`, or only the changed entries' new stats. */
export type RawWalkAgainst =
  | { count: number; same: true }
  | { count: number; changed: Uint32Array; mode: Uint32Array; size: BigInt64Array; mtimeNs: BigInt64Array; ctimeNs: BigInt64Array };

export interface RawHasher {
  update(data: Uint8Array): RawHasher;
  digest(length?: number): Buffer;
  reset(): RawHasher;
}

export interface RawChunker {
  push(data: Uint8Array): Uint32Array;
  finish(): Uint32Array;
}

export interface RawChunkStream {
  size: number;
  dev: bigint;
  ino: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  blocksAllocated: number;
  next(): Promise<{ offset: number; data: Buffer; lengths: Uint32Array; ids: Buffer } | null>;
  take(): { offset: number; data: Buffer; lengths: Uint32Array; ids: Buffer } | null;
  release(data: Uint8Array): boolean;
  close(): void;
}

/** The copy-on-write page map of one file (native/napi_cow.cc; wrapped by lib/native/cow.ts). */
export interface RawCowPages {
  readonly size: number;
  readonly validBase: number;
  readonly dirtyPages: number;
  write(pos: number, len: number): Float64Array | null;
  commitWrite(pos: number, len: number): void;
  planRead(pos: number, len: number, out: Float64Array): number;
  truncate(size: number): void;
  rebase(size: number): void;
  changedRanges(baseIsExtents: boolean): Float64Array;
  rechunk(params: RawParams | undefined, baseIsExtents: boolean, piece: number, io: RawRechunkIo): { bytesRead: number; chunks: number };
}

export interface RawRechunkIo {
  chunkStart(x: number): number;
  read(pos: number, len: number, dst: Buffer): void;
  /** A batch of new chunks: their bytes back to back (readable during the call only), [offset, start, length] each, their ids. */
  emit(bytes: Buffer, table: Float64Array, ids: Buffer): void;
  replace(from: number, to: number, chunks: number): void;
}

export interface NativeBinding {
  CowPages: new (baseSize: number) => RawCowPages;
  cowPage: number;
  blake3(data: Uint8Array, out?: Buffer): Buffer;
  objectIdInto(out: Buffer | undefined, domainTag: string, ...parts: Uint8Array[]): Buffer;
  Blake3Hasher: new (domainTag?: string) => RawHasher;
  chunkLengths(data: Uint8Array, params: RawParams | undefined): Uint32Array;
  chunkAndHash(data: Uint8Array, params: RawParams | undefined, domainTag: string): { lengths: Uint32Array; ids: Buffer };
  gearTable(): BigUint64Array;
  Chunker: new (params: RawParams | undefined) => RawChunker;
  hashBuffers(buffers: Uint8Array[], options: RawBatchOptions): Promise<(RawDigest & { length: number })[]>;
  scanPaths(paths: Buffer[], options: RawBatchOptions): Promise<RawScanBatch>;
  /** An opaque handle: the scan runs on the pool; scanPathsTake waits for it on this thread. */
  scanPathsStart(paths: Buffer[], options: RawBatchOptions): object;
  scanPathsTake(handle: object): RawScanBatch;
  walkTree(root: Buffer, threads: number, against?: RawWalkResult): Promise<RawWalkResult | RawWalkAgainst>;
  walkTreeSync(root: Buffer, threads: number, against?: RawWalkResult): RawWalkResult | RawWalkAgainst;
  ChunkStream: new (
    path: Buffer,
    options: { params: RawParams | undefined; pieceSize: number; readAhead: number; expect: { dev: bigint; ino: bigint; size: number; mtimeNs: bigint; ctimeNs: bigint } | undefined },
  ) => RawChunkStream;
  setXattr(path: Buffer, name: string, value: Uint8Array): void;
  removeXattr(path: Buffer, name: string): void;
  setTimes(path: Buffer, atimeNs: bigint, mtimeNs: bigint): void;
  getXattrs(path: Buffer): { name: string; value: Buffer }[];
  listXattrs(path: Buffer): string[];
  /** read(2) into `buffer`: bytes read, or -errno. */
  fdRead(fd: number, buffer: Uint8Array): number;
  /** read(2) of one request into a free request buffer: bytes * 65536 + its slot, or -errno. */
  fdReadRequest(fd: number, poll: boolean): number;
  /** A Buffer over request buffer `slot`'s bytes. */
  requestSlot(slot: number): Buffer;
  /** read(2) of one request into a free request buffer when one waits (poll first): bytes * 65536 + its slot, -EAGAIN when none waits, or -errno. The slot stays held until requestRelease. */
  fdReadRequestReady(fd: number): number;
  /** A request buffer read by fdReadRequestReady may be reused. */
  requestRelease(slot: number): void;
  /** write(2) of `buffer`'s first `length` bytes: bytes written, or -errno. */
  fdWrite(fd: number, buffer: Uint8Array, length: number): number;
  fuseSpin(ns: number): void;
  fuseSpinStats(): FuseSpinStats;
  fdWritev(fd: number, buffers: Uint8Array[]): number;
  /** Queues `buffer` (a copy, or the request buffer it lies in) for pwrite(2) at `position` by a background thread: 0, or -errno of an earlier failure on fd. */
  writeBehind(fd: number, buffer: Uint8Array, position: number): number;
  /** Waits for fd's queued writes: 0, or -errno of a failure not reported before. `release`: fd is about to be closed. */
  writeBehindDrain(fd: number, release?: boolean): number;
  /** pread(2) into `buffer` at `position` (O_DIRECT for a file written so): bytes read, or -errno. */
  writeBehindRead(fd: number, buffer: Uint8Array, position: number): number;
  /** A spool file changes other than by writeBehind (truncate): read windows are dropped. */
  writeBehindChanged(): void;
  /** Bytes queued and not yet written (all descriptors). */
  writeBehindPending(): number;
  writeBehindModes(): { direct: number; buffered: number; switches: number };
  /** A file writer with `threads` background threads and at most `limit` bytes queued. */
  fileWriterOpen(threads: number, limit: number): unknown;
  /** Queues a file to create at `path` with the concatenated `pieces`: true once queued, false after a failure. */
  fileWriterPut(writer: unknown, path: Buffer, pieces: Uint8Array[], mode: number, uid: number, gid: number, mtimeNs: bigint, chown: boolean): boolean;
  /** Waits for every queued file: null, or the path and errno of the first failure. */
  fileWriterDrain(writer: unknown): [Buffer, number] | null;
  /** Waits for the queue, then ends the writer's threads. */
  fileWriterClose(writer: unknown): void;
  /** flock(fd, LOCK_EX | LOCK_NB): 0, or -errno. */
  fdLock(fd: number): number;
  /** mknod(2) of a FIFO ('p') or device ('c', 'b') at raw path bytes: 0, or -errno. */
  makeNode(path: Uint8Array, kind: 'p' | 'c' | 'b', permissions: number, major: number, minor: number): number;
  /** Opens /dev/fuse and mount(2)s it (nosuid,nodev) with "fd=N," + options: the descriptor. */
  fuseMount(mountpoint: string, source: string, type: string, options: string): Promise<number>;
  /** umount2(2), MNT_DETACH when lazy, never following a symlink. */
  unmount(mountpoint: string, lazy: boolean): Promise<void>;
  /** socketpair(AF_UNIX, SOCK_STREAM), both ends close-on-exec. */
  socketPair(): [number, number];
  /** A descriptor received as SCM_RIGHTS (never blocks), or -errno. */
  receiveFd(socket: number): number;
  /** FUSE_DEV_IOC_BACKING_OPEN of the plain file at path on a /dev/fuse descriptor: the backing id (> 0), or -errno. */
  fuseBackingOpen(devFd: number, path: string): number;
  /** FUSE_DEV_IOC_BACKING_CLOSE: 0, or -errno. */
  fuseBackingClose(devFd: number, id: number): number;
  zstdCompress(data: Uint8Array, level: number, prefix?: Uint8Array): Buffer;
  zstdDecompress(frame: Uint8Array, size: number, prefix?: Uint8Array): Buffer;
  zstdDecompressInto(frame: Uint8Array, out: Uint8Array, size: number, prefix?: Uint8Array): number;
  zstdCompressStart(data: Uint8Array, level: number, dict?: Uint8Array, prefix?: Uint8Array, dictKey?: Uint8Array): number;
  zstdCompressResult(job: number): Buffer | undefined;
  /** native/run_decode.h: decodes and verifies a run of chunks of one pack row; see lib/native/run.ts. */
  decodeRun(src: Uint8Array, spec: Float64Array, ids: Uint8Array, out: Uint8Array | null, ok: Uint8Array, threads: number, dict?: Uint8Array, dictKey?: Uint8Array): void;
  /** The same, started on pool threads; wait() finishes it (the buffers are held until then). */
  RunTask: new (src: Uint8Array, spec: Float64Array, ids: Uint8Array, out: Uint8Array | null, ok: Uint8Array, threads: number, dict?: Uint8Array, dictKey?: Uint8Array) => { wait(): void };
  runTasksAlive(): number;
  /** An ordered output to `fd` written by a background thread (native/napi_fd_output.cc); `pipe` > 0 enlarges a pipe. */
  FdOutput: new (fd: number, limit: number, pipe: number) => {
    /** Queues `buffer` (held, not copied): pieces written so far, or -errno of the first failure. */
    put(buffer: Uint8Array): number;
    /** Waits until `count` pieces are written (-1: all queued): pieces written so far, or -errno. */
    wait(count: number): number;
    close(): void;
    readonly pipeSize: number;
  };
  blobRead(handle: number, table: string, column: string, rowid: number, offset: number, length: number, out: Uint8Array, outOffset: number): number;
  addonPath: string;
  zstdVersion: string;
  defaultThreads: number;
  simd: string;
  mallocTrim(): boolean;
  mallocTrimSoon(): boolean;
  mallocStats(): MallocStats | null;
  mallocTune(mmapThreshold: number, arenaMax: number): boolean;
  mallocStreamHeap(on: boolean): boolean;
  realtimeNs(): bigint;
  version: string;
  blake3Version: string;
}

/** The request readers' polling before they block (native/request_pool.h), since the process started. */
export interface FuseSpinStats {
  /** How long a reader polls now, ns (0: it blocks at once). */
  spinNs: number;
  /** Polls begun. */
  spins: number;
  /** Polls that found a request waiting. */
  caught: number;
  /** Time spent polling, ns. */
  spunNs: number;
}

/** glibc's heap (mallinfo2), bytes: arenas' main heaps, blocks mapped on their own, allocated, free in the arenas. */
export interface MallocStats {
  arena: number;
  mmap: number;
  inUse: number;
  free: number;
}

export function findPackageRoot(from: string): string {
  let dir = from;
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown };
      if (pkg.name === 'layerfs') return dir;
    } catch {
      // no package.json here, or not ours: keep walking
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json named "layerfs" above ${from}`);
    dir = parent;
  }
}

function load(): NativeBinding {
  const root = findPackageRoot(dirname(fileURLToPath(import.meta.url)));
  const require = createRequire(join(root, 'package.json'));
  try {
    const nodeGypBuild = require('node-gyp-build') as (dir: string) => unknown;
    return nodeGypBuild(root) as NativeBinding;
  } catch (e) {
    throw new LayerFsError('ERR_NATIVE', 'the layerfs native addon could not be loaded', {
      // No prebuilt addon for this platform: the package carries every source its build needs.
      hint: `no prebuilt addon loads on ${process.platform}-${process.arch}; build it with \`npx cmake-js compile --out build\` in ${root} (needs cmake and a C++17 compiler)`,
      path: root,
      cause: e,
    });
  }
}

export const native: NativeBinding = load();
