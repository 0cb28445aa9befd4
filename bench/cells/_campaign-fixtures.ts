// Fixtures of the dedup families (issue 6), cached like every fixture (fixtures/cache.ts) in
// bench/.fixtures/<name>-<hash>/tree so that layerfs and git see the very same bytes. Not a
// cell; imported by bench/families/dedup_*.ts (which create them before any cell runs) and by
// nothing else.
//
//   cdcref             ref.bin: 1 MiB of seeded random bytes
//   cdc-<kind>-<N>     ref.bin plus v0000.bin … v<N-1>.bin, each ref.bin with one edit of <kind>
//                      at a seeded position:
//                        overwrite-64B   64 bytes replaced
//                        insert-4KiB     4,096 bytes spliced in (shifts the rest)
//                        delete-4KiB     4,096 bytes cut out (shifts the rest)
//                        byte-per-4KiB   one byte changed in every 4 KiB block (256 changes)
//   xfile-<case>-<N>   N files of 1 MiB, f0000.bin …:
//                        identical       N copies of one file
//                        unique          N different files
//                        mixed           even-numbered files are copies of one file, odd ones unique
//                        shared-half     every file: the same first 512 KiB, its own last 512 KiB

import fs from 'node:fs';
import path from 'node:path';
import { cachedFixture, type CachedFixture } from '../fixtures/cache.js';
import { DIR_MODE, FILE_MODE, FIXTURE_MTIME } from '../fixtures/layout.js';
import { Rng } from '../lib/prng.js';
import { seededBytes } from './_campaign.js';

export const MIB = 1024 * 1024;
export const CDC_KINDS = ['overwrite-64B', 'insert-4KiB', 'delete-4KiB', 'byte-per-4KiB'] as const;
export type CdcKind = (typeof CDC_KINDS)[number];
export const XFILE_CASES = ['identical', 'unique', 'mixed', 'shared-half'] as const;
export type XFileCase = (typeof XFILE_CASES)[number];

const SEED = 1;

function writeFixed(file: string, data: Uint8Array): void {
  const fd = fs.openSync(file, 'w', FILE_MODE);
  try {
    let off = 0;
    while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
    fs.fchmodSync(fd, FILE_MODE);
    fs.futimesSync(fd, FIXTURE_MTIME, FIXTURE_MTIME);
  } finally {
    fs.closeSync(fd);
  }
}

function finishDir(dir: string): void {
  fs.chmodSync(dir, DIR_MODE);
  fs.utimesSync(dir, FIXTURE_MTIME, FIXTURE_MTIME);
}

export function cdcReference(): Buffer {
  return seededBytes(SEED, 0xcdc0, MIB);
}

/** The variant i of kind `kind` of the reference. */
export function cdcVariant(ref: Buffer, kind: CdcKind, i: number): Buffer {
  const rng = new Rng(SEED, 0xcd000000 + CDC_KINDS.indexOf(kind) * 1_000_000 + i);
  const size = ref.length;
  switch (kind) {
    case 'overwrite-64B': {
      const out = Buffer.from(ref);
      const o = rng.below(size - 64 + 1);
      seededBytes(SEED, 0xcd100000 + i, 64).copy(out, o);
      return out;
    }
    case 'insert-4KiB': {
      const o = rng.below(size + 1);
      return Buffer.concat([ref.subarray(0, o), seededBytes(SEED, 0xcd200000 + i, 4096), ref.subarray(o)]);
    }
    case 'delete-4KiB': {
      const o = rng.below(size - 4096 + 1);
      return Buffer.concat([ref.subarray(0, o), ref.subarray(o + 4096)]);
    }
    case 'byte-per-4KiB': {
      const out = Buffer.from(ref);
      for (let b = 0; b < size; b += 4096) {
        const p = b + rng.below(Math.min(4096, size - b));
        out[p] = out[p]! ^ (1 + rng.below(255));
      }
      return out;
    }
  }
}

export function ensureCdcRef(): CachedFixture {
  return cachedFixture('cdcref', { seed: SEED, bytes: MIB }, (dir) => {
    fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
    writeFixed(path.join(dir, 'ref.bin'), cdcReference());
    finishDir(dir);
    return { files: 1, dirs: 0, bytes: MIB };
  });
}

export function ensureCdcTree(kind: CdcKind, n: number): CachedFixture {
  return cachedFixture(`cdc-${kind}-${n}`, { seed: SEED, kind, n, refBytes: MIB }, (dir) => {
    fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
    const ref = cdcReference();
    writeFixed(path.join(dir, 'ref.bin'), ref);
    let bytes = ref.length;
    for (let i = 0; i < n; i++) {
      const v = cdcVariant(ref, kind, i);
      writeFixed(path.join(dir, `v${String(i).padStart(4, '0')}.bin`), v);
      bytes += v.length;
    }
    finishDir(dir);
    return { files: n + 1, dirs: 0, bytes, variantBytes: bytes - ref.length };
  });
}

export function ensureCrossFileTree(c: XFileCase, n: number): CachedFixture {
  return cachedFixture(`xfile-${c}-${n}`, { seed: SEED, case: c, n, fileBytes: MIB }, (dir) => {
    fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
    const common = seededBytes(SEED, 0xf11e0000, MIB);
    for (let i = 0; i < n; i++) {
      const unique = () => seededBytes(SEED, 0xf11e0001 + i, MIB);
      let data: Buffer;
      if (c === 'identical') data = common;
      else if (c === 'unique') data = unique();
      else if (c === 'mixed') data = i % 2 === 0 ? common : unique();
      else data = Buffer.concat([common.subarray(0, MIB / 2), unique().subarray(0, MIB / 2)]);
      writeFixed(path.join(dir, `f${String(i).padStart(4, '0')}.bin`), data);
    }
    finishDir(dir);
    return { files: n, dirs: 0, bytes: n * MIB };
  });
}
