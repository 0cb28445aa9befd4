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
  xattrs: boolean;
  retries: number;
}

export interface RawDigest {
  chunked: boolean;
  contentId: Buffer;
  chunkLengths: Uint32Array;
  chunkIds: Buffer;
}

export interface RawScanEntry {
  error?: { code: string; errno?: string; message: string };
  kind?: string;
  mode?: number;
  uid?: number;
  gid?: number;
  size?: number;
  mtimeNs?: bigint;
  ctimeNs?: bigint;
  ino?: bigint;
  dev?: bigint;
  nlink?: number;
  rdev?: number;
  xattrs?: { name: string; value: Buffer }[];
  linkTarget?: Buffer;
  digest?: RawDigest;
  data?: Buffer;
}

/** walkTree's result: typed arrays, one slot per entry (see lib/native/walk.ts). */
export interface RawWalkResult {
  count: number;
  names: Buffer;
  nameOffsets: Uint32Array;
  parent: Int32Array;
  kind: Uint8Array;
  mode: Uint32Array;
  ino: BigUint64Array;
  size: BigInt64Array;
  mtimeNs: BigInt64Array;
  ctimeNs: BigInt64Array;
}

export interface RawHasher {
  update(data: Uint8Array): RawHasher;
  digest(length?: number): Buffer;
  reset(): RawHasher;
}

export interface RawChunker {
  push(data: Uint8Array): Uint32Array;
  finish(): Uint32Array;
}

export interface NativeBinding {
  blake3(data: Uint8Array, out?: Buffer): Buffer;
  objectIdInto(out: Buffer | undefined, domainTag: string, ...parts: Uint8Array[]): Buffer;
  Blake3Hasher: new (domainTag?: string) => RawHasher;
  chunkLengths(data: Uint8Array, params: RawParams | undefined): Uint32Array;
  chunkAndHash(data: Uint8Array, params: RawParams | undefined, domainTag: string): { lengths: Uint32Array; ids: Buffer };
  gearTable(): BigUint64Array;
  Chunker: new (params: RawParams | undefined) => RawChunker;
  hashBuffers(buffers: Uint8Array[], options: RawBatchOptions): Promise<(RawDigest & { length: number })[]>;
  scanPaths(paths: Buffer[], options: RawBatchOptions): Promise<RawScanEntry[]>;
  walkTree(root: Buffer, threads: number): Promise<RawWalkResult>;
  walkTreeSync(root: Buffer, threads: number): RawWalkResult;
  setXattr(path: Buffer, name: string, value: Uint8Array): void;
  removeXattr(path: Buffer, name: string): void;
  setTimes(path: Buffer, atimeNs: bigint, mtimeNs: bigint): void;
  getXattrs(path: Buffer): { name: string; value: Buffer }[];
  listXattrs(path: Buffer): string[];
  defaultThreads: number;
  simd: string;
  version: string;
  blake3Version: string;
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
      hint: 'run `npm run build:native` (needs cmake and a C++ compiler)',
      path: root,
      cause: e,
    });
  }
}

export const native: NativeBinding = load();
