#!/usr/bin/env node
// Builds and runs the libFuzzer harnesses in fuzz/ (see docs/FUZZING.md).
//
//   npm run fuzz -- [--seconds N] [--harness NAME[,NAME]] [--blake3 asm|c|portable]
//                   [--build-only] [--reuse-corpus] [--seed N] [--fuzzer-arg=-flag=value]
//   npm run fuzz -- --make-corpus        rewrite the seed corpus in fuzz/corpus/
//
// Harnesses are built with clang++ -fsanitize=fuzzer,address,undefined -O1 -g from the pure C++
// part of native/ (fastcdc.cc, multihash.cc, digest.cc; no Node-API) and BLAKE3's C sources from
// node_modules/@c4312/blake3-native/c, into build/fuzz/<blake3 flavor>/. Each harness runs N
// seconds (default 30) on a scratch copy of its seed corpus, so runs never grow the repository.
// Crash reproducers go to fuzz/findings/<harness>/. Exit status: 0 no findings, 1 findings or a
// failed build, 2 clang/libFuzzer missing. --seconds 0 only replays the seed corpus and kept
// findings (a quick regression check).
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
  createWriteStream,
} from 'node:fs';
import { createRequire } from 'node:module';
import { arch as osArch, platform } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const rel = (p) => path.relative(root, p) || '.';

// Extra flags per source. FastCDC's scan loop compares a fingerprint on every byte; comparison
// hooks there (trace-cmp) tripled the cost of an execution and cannot steer a hash, so that file
// keeps edge coverage only. BLAKE3's C code is data-independent: no coverage at all.
const SOURCE_FLAGS = {
  'native/fastcdc.cc': ['-fno-sanitize-coverage=trace-cmp'],
};
const BLAKE3_COVERAGE = ['-fsanitize-coverage=0'];

const HARNESSES = {
  chunker_stream: {
    sources: ['native/fastcdc.cc'],
    // Room for several default-size (32 KiB max) chunks plus the 18-byte header.
    maxLen: 131072,
    args: [],
  },
  multihash: {
    sources: ['native/fastcdc.cc', 'native/multihash.cc', 'native/digest.cc'],
    // Message bytes are expanded from the input, so inputs stay small.
    maxLen: 4096,
    args: [],
  },
  chunk_reader: {
    sources: ['native/fastcdc.cc', 'native/multihash.cc', 'native/chunk_reader.cc'],
    // Data is expanded from the input (up to ~1 MiB), so inputs stay moderate.
    maxLen: 65536,
    args: [],
  },
  cow_pages: {
    sources: ['native/fastcdc.cc', 'native/cow.cc'],
    // Operations are 6 bytes each; written data is expanded from them.
    maxLen: 4096,
    args: [],
  },
  run_decode: {
    sources: ['native/multihash.cc', 'native/run_decode.cc', 'native/pool.cc'],
    // zstd's decoder (common/ and decompress/), compiled without coverage like BLAKE3.
    zstd: true,
    // Rows hold zstd frames of up to a few hundred KiB (seed corpus).
    maxLen: 1 << 20,
    args: [],
  },
  xattr_list: {
    // The harness includes native/scan.cc itself (CollectXattrs is internal to it).
    sources: ['native/fastcdc.cc', 'native/multihash.cc', 'native/digest.cc'],
    maxLen: 4096,
    args: [],
  },
};

// ---------------------------------------------------------------- arguments

function usage(code) {
  const out = code === 0 ? console.log : console.error;
  out(`usage: npm run fuzz -- [options]
  --seconds N           run each harness N seconds (default 30; 0 = replay corpus and findings only)
  --harness NAME        only this harness (repeat or comma-separate); known: ${Object.keys(HARNESSES).join(', ')}
  --blake3 FLAVOR       asm (default: the .S kernels, as the addon), c (SIMD intrinsics C files,
                        instrumented by ASan) or portable (no SIMD)
  --build-only          build, do not run
  --reuse-corpus        keep growing build/fuzz/corpus/<harness> across runs instead of a fresh copy
  --seed N              libFuzzer -seed (default: random)
  --fuzzer-arg=ARG      pass ARG to libFuzzer (repeatable), e.g. --fuzzer-arg=-jobs=2
  --make-corpus         (re)write the deterministic seed corpus in fuzz/corpus/ and exit`);
  process.exit(code);
}

const opts = { seconds: 30, harnesses: [], flavor: 'asm', buildOnly: false, reuse: false, seed: null, extra: [], makeCorpus: false };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => {
      if (inline !== undefined) return inline;
      if (i + 1 >= argv.length) usage(1);
      return argv[++i];
    };
    switch (flag) {
      case '--seconds': {
        const v = Number(value());
        if (!Number.isInteger(v) || v < 0) {
          console.error('--seconds needs a whole number >= 0');
          process.exit(1);
        }
        opts.seconds = v;
        break;
      }
      case '--harness':
        opts.harnesses.push(...value().split(',').filter(Boolean));
        break;
      case '--blake3':
        opts.flavor = value();
        if (!['asm', 'c', 'portable'].includes(opts.flavor)) usage(1);
        break;
      case '--build-only':
        opts.buildOnly = true;
        break;
      case '--reuse-corpus':
        opts.reuse = true;
        break;
      case '--seed':
        opts.seed = Number(value());
        break;
      case '--fuzzer-arg':
        opts.extra.push(value());
        break;
      case '--make-corpus':
        opts.makeCorpus = true;
        break;
      case '--help':
      case '-h':
        usage(0);
        break;
      default:
        console.error(`unknown argument ${a}`);
        usage(1);
    }
  }
  for (const h of opts.harnesses) {
    if (!HARNESSES[h]) {
      console.error(`unknown harness ${h}; known: ${Object.keys(HARNESSES).join(', ')}`);
      process.exit(1);
    }
  }
  if (opts.harnesses.length === 0) opts.harnesses = Object.keys(HARNESSES);
}

// ---------------------------------------------------------------- seed corpus

/** Deterministic patterned bytes (xorshift32). */
function pattern(seed, n) {
  const b = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    b[i] = x & 0xff;
  }
  return b;
}

/** chunker_stream header: mode, min/avg/max words, level byte, piece selector, split seed, expand/4. */
function chunkerInput({ mode = 0, min = 0, avg = 0, max = 0, level = 0, piece = 0, seed = 0, expand = 0 }, data) {
  const h = Buffer.alloc(18);
  h[0] = mode;
  h.writeUInt32LE(min >>> 0, 1);
  h.writeUInt32LE(avg >>> 0, 5);
  h.writeUInt32LE(max >>> 0, 9);
  h[13] = level;
  h[14] = piece;
  h[15] = seed;
  h.writeUInt16LE(expand, 16);
  return Buffer.concat([h, data]);
}

/** A multihash length code for n bytes: direct below 16 KiB, else n/4 (n a multiple of 4). */
const len = (n) => (n < 0x4000 ? n : 0xc000 | (n / 4));

/** multihash header: tag selector, fill, count, options, one u16 length code per message. */
function multihashInput({ tag = 0, fill = 0, opts = 0, lengths = [] }, seed) {
  const h = Buffer.alloc(4 + 2 * lengths.length);
  h[0] = tag;
  h[1] = fill;
  h[2] = lengths.length;
  h[3] = opts;
  lengths.forEach((l, i) => {
    h.writeUInt16LE(l, 4 + 2 * i);
  });
  return Buffer.concat([h, seed]);
}

/**
 * run_decode seeds: u8 count, u8 threads, u8 flags, then per chunk u16 src_off, u16 src_len,
 * u8 codec (bit 0 zstd, bit 1 true id, bit 2 offsets and lengths / 8), u16 at, u16 size; then the
 * row. Frames are made by the built addon's zstdCompress (magicless, as the Store writes them).
 */
function runDecodeSeeds() {
  const addon = createRequire(import.meta.url)('../build/Release/layerfs_native.node');
  const text = (n, salt) => Buffer.from(Array.from({ length: Math.ceil(n / 8) }, (_, i) => `line ${(i * 7 + salt) % 97} text\n`).join('')).subarray(0, n);
  const input = (threads, flags, chunks, row) => {
    const h = Buffer.alloc(3 + 9 * chunks.length);
    h[0] = chunks.length - 1;
    h[1] = threads - 1;
    h[2] = flags;
    chunks.forEach((c, k) => {
      const q = c.scale ? 8 : 1;
      const o = 3 + 9 * k;
      h.writeUInt16LE(c.off / q, o);
      h.writeUInt16LE(c.len / q, o + 2);
      h[o + 4] = (c.zstd ? 1 : 0) | (c.wrong ? 0 : 2) | (c.scale ? 4 : 0);
      h.writeUInt16LE(c.at / q, o + 5);
      h.writeUInt16LE(c.size / q, o + 7);
    });
    return Buffer.concat([h, row]);
  };
  const seeds = {};
  // One frame of four chunks, then two raw chunks: whole frame (decoded in place), raw copies.
  {
    const parts = [text(3000, 1), text(5000, 2), text(1200, 3), text(4000, 4)];
    const frame = addon.zstdCompress(Buffer.concat(parts), 1);
    const raw = [pattern(31, 700), pattern(32, 900)];
    const row = Buffer.concat([frame, ...raw]);
    let at = 0;
    const z = parts.map((b) => ((at += b.length), { off: 0, len: frame.length, zstd: true, at: at - b.length, size: b.length }));
    const r = [{ off: frame.length, len: 700, at: 0, size: 700 }, { off: frame.length + 700, len: 900, at: 0, size: 900 }];
    seeds['frame-then-raw'] = input(2, 0, [...z, ...r], row);
    seeds['frame-part-wrong-id'] = input(1, 0, [z[1], { ...z[3], wrong: true }, r[1]], row);
    seeds['raw-in-place'] = input(2, 1, r, row);
  }
  // Six frames of 4 × 16 KiB (384 KiB in all): two parts for two or three threads.
  {
    const frames = [0, 1, 2, 3, 4, 5].map((f) => addon.zstdCompress(Buffer.concat([0, 1, 2, 3].map((i) => text(16384, 10 * f + i))), 1));
    const chunks = [];
    let off = 0;
    for (const f of frames) {
      for (let i = 0; i < 4; i++) chunks.push({ off, len: f.length, zstd: true, at: i * 16384, size: 16384 });
      off += f.length;
    }
    seeds['six-frames-two-parts'] = input(3, 0, chunks, Buffer.concat(frames));
  }
  return seeds;
}

function seedCorpus() {
  const seeds = { chunker_stream: {}, multihash: {}, chunk_reader: {}, xattr_list: {}, cow_pages: {}, run_decode: runDecodeSeeds() };
  // Default parameters (8192 / 16384 / 32768): empty, 1 byte, min-1, min, avg, max, max+1.
  const sizes = { empty: 0, one: 1, 'min-1': 8191, min: 8192, avg: 16384, max: 32768, 'max+1': 32769 };
  let k = 0;
  for (const [name, n] of Object.entries(sizes)) {
    // Vary the split strategy (mode bits 2-3) and piece size selector across the files.
    const mode = (k % 4) << 2;
    seeds.chunker_stream[`default-${name}`] = chunkerInput({ mode, piece: 3 + k, seed: k }, pattern(1000 + n, n));
    k++;
  }
  // Raw parameters 64 / 256 / 1024 / level 2 (mode 2 uses them when valid).
  const small = { min: 64, avg: 256, max: 1024, level: 2 };
  for (const [name, n] of Object.entries({ empty: 0, one: 1, 'min-1': 63, min: 64, avg: 256, max: 1024, 'max+1': 1025 })) {
    seeds.chunker_stream[`small-${name}`] = chunkerInput({ mode: 2 | ((k % 4) << 2), ...small, piece: k, seed: k }, pattern(2000 + n, n));
    k++;
  }
  // Invalid raw parameters (minSize below 64, avgSize not a power of two), and all-zero data
  // expanded to 2·max + 1 bytes (cut at exactly maxSize).
  seeds.chunker_stream['invalid-min'] = chunkerInput({ mode: 2, min: 63, avg: 128, max: 256, level: 1 }, pattern(3, 300));
  seeds.chunker_stream['invalid-avg'] = chunkerInput({ mode: 2, min: 64, avg: 200, max: 400, level: 4 }, pattern(4, 300));
  seeds.chunker_stream['zeros-2max+1'] = chunkerInput({ mode: 0x10, expand: Math.ceil((2 * 32768 + 1) / 4) }, Buffer.alloc(0));

  const data = pattern(7, 64);
  seeds.multihash.empty = Buffer.alloc(0);
  seeds.multihash['chunk-tag-sizes'] = multihashInput(
    { tag: 0, opts: 7 | 0x80, lengths: [0, 1, 1023, 1024, 2047, 2048, 3072, 8191, 8192, 16384, 32768].map(len) },
    data,
  );
  // Chunker 512 / 1024 / 4096 (opts avg code 3), level 2: min-1, min, avg, max, max+1.
  seeds.multihash['cdc-1k-bounds'] = multihashInput({ tag: 1, opts: 3 | (2 << 3) | 0x80, lengths: [511, 512, 1024, 4096, 4097] }, data);
  // Totals within 8 bytes of k KiB (type-1 codes) under a 511-byte tag (prefix 512 bytes).
  seeds.multihash['tag511-kib-edges'] = multihashInput(
    { tag: 3 + 12, fill: 9, opts: 0x20 | 0x80, lengths: [1, 2, 3, 4, 17, 33].map((kib, i) => 0x4000 | (kib << 4) | (i * 3) % 16) },
    data,
  );
  // A 1008-byte tag (no batching: prefix over half a BLAKE3 chunk) and the 2 KiB threshold.
  seeds.multihash['tag1008-threshold'] = multihashInput(
    { tag: 128 + 112, fill: 1, opts: 0x40, lengths: [0x8000 | 15, 0x8000 | 16, 0x8000 | 17, 5000] },
    data,
  );
  seeds.multihash['many-small'] = multihashInput({ tag: 2, opts: 0 | 0x60, lengths: Array.from({ length: 40 }, (_, i) => 3000 + 97 * i) }, data);
  // chunk_reader: default and small parameters around piece and chunk bounds, each event.
  const reader = (choice, avgCode, piece, event, k, expand, pat, data) => {
    const h = Buffer.alloc(8);
    h[0] = choice;
    h[1] = avgCode;
    h[2] = piece;
    h[3] = event;
    h[4] = k;
    h.writeUInt16LE(expand, 5);
    h[7] = pat;
    return Buffer.concat([h, data]);
  };
  const events = ['none', 'append', 'truncate', 'rewrite', 'mismatch', 'fifo', 'symlink', 'directory'];
  seeds.chunk_reader.empty = reader(0, 0, 0, 0, 0, 0, 0, Buffer.alloc(0));
  seeds.chunk_reader['default-3-pieces'] = reader(0, 0, 0, 0, 0, (3 * 32768 + 5) >> 4, 1, pattern(11, 64));
  seeds.chunk_reader['small-exact-piece'] = reader(1, 2, 0, 0x80, 0, 2048 >> 4, 1, pattern(12, 64));
  events.forEach((_, e) => {
    seeds.chunk_reader[`small-event-${events[e]}`] = reader(2 | (1 << 2), 1, e, e | (e % 2 ? 0x80 : 0), e, 20000 >> 4, 1, pattern(20 + e, 32));
  });
  seeds.chunk_reader['zeros-max-cuts'] = reader(3, 6, 1, 0, 0, 70000 >> 4, 0, Buffer.alloc(1));
  // xattr_list: flags, then versions of the name list ([u16 length][bytes]).
  const xattrs = (flags, ...lists) => Buffer.concat([Buffer.from([flags]), ...lists.flatMap((l) => [Buffer.from([l.length & 0xff, l.length >> 8]), l])]);
  seeds.xattr_list.empty = xattrs(3);
  seeds.xattr_list['user-names'] = xattrs(7, Buffer.from('user.x\0user.y\0'), Buffer.from('user.x\0'));
  seeds.xattr_list['mixed-unterminated'] = xattrs(6, Buffer.from('security.selinux\0user.a\0\0\0user.tail'), Buffer.from('user.a\0user.b\0user.c\0'));
  // cow_pages: params, piece, base size / 8 (or / 2), pattern, then 6-byte operations
  // (kind, position / 4, length, seed): write 0, truncate 3, read 4, commit 6, whole pages 7.
  const cow = (params, piece, base, ...ops) => {
    const h = Buffer.alloc(5);
    h[0] = params;
    h[1] = piece;
    h.writeUInt16LE(base, 2);
    h[4] = 1;
    return Buffer.concat([h, ...ops.map(([k, a, b, seed]) => {
      const o = Buffer.alloc(6);
      o[0] = k;
      o.writeUInt16LE(a, 1);
      o.writeUInt16LE(b, 3);
      o[5] = seed;
      return o;
    })]);
  };
  seeds.cow_pages.empty = cow(0, 0, 0);
  seeds.cow_pages['overwrite-commit'] = cow(1, 3, 4000, [0, 2000, 4095, 1], [4, 1900, 9000, 0], [6, 0, 0, 0]);
  seeds.cow_pages['truncate-extend-commit'] = cow(2, 2, 6000, [3, 0, 5000, 0], [0, 3000, 100, 2], [4, 0, 30000, 0], [6, 0, 0, 0], [7, 1024, 1, 3], [6, 0, 0, 0]);
  seeds.cow_pages['default-params'] = cow(4, 4, 30000, [0, 30000, 4096, 4], [0, 50000, 10, 5], [6, 0, 0, 0], [3, 0, 0x10, 0], [0, 0, 20000, 6], [6, 0, 0, 0]);
  return seeds;
}

if (opts.makeCorpus) {
  for (const [h, files] of Object.entries(seedCorpus())) {
    const dir = path.join(root, 'fuzz/corpus', h);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const [name, buf] of Object.entries(files)) writeFileSync(path.join(dir, `${name}.bin`), buf);
    console.log(`${rel(dir)}: ${Object.keys(files).length} files`);
  }
  process.exit(0);
}

// ---------------------------------------------------------------- toolchain

function findTool(names) {
  for (const n of names) {
    if (!n) continue;
    const r = spawnSync(n, ['--version'], { encoding: 'utf8' });
    if (r.status === 0) return n;
  }
  return null;
}

const CXX = findTool([process.env.FUZZ_CXX, 'clang++', 'clang++-14', 'clang++-15', 'clang++-16']);
const CC = findTool([process.env.FUZZ_CC, CXX?.replace('clang++', 'clang'), 'clang', 'clang-14']);
const INSTALL_HINT = `Install clang 14 (libFuzzer ships with it) on Debian/Ubuntu:
  sudo apt-get update && sudo apt-get install -y clang libclang-rt-14-dev
or point FUZZ_CXX / FUZZ_CC at another clang++ / clang with -fsanitize=fuzzer support.`;
if (!CXX || !CC) {
  console.error(`fuzz: clang/clang++ not found.\n${INSTALL_HINT}`);
  process.exit(2);
}

const outDir = path.join(root, 'build/fuzz');
mkdirSync(outDir, { recursive: true });
{
  // libFuzzer's runtime is a separate package on Debian (libclang-rt-14-dev).
  const probe = path.join(outDir, 'probe.cc');
  writeFileSync(probe, '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n');
  const r = spawnSync(CXX, ['-fsanitize=fuzzer,address,undefined', probe, '-o', path.join(outDir, 'probe')], { encoding: 'utf8' });
  if (r.status !== 0) {
    console.error(`fuzz: ${CXX} cannot link a libFuzzer binary (-fsanitize=fuzzer,address,undefined):\n${(r.stderr || '').trim()}\n${INSTALL_HINT}`);
    process.exit(2);
  }
}

const require = createRequire(path.join(root, 'package.json'));
let blake3Dir;
try {
  blake3Dir = path.join(path.dirname(require.resolve('@c4312/blake3-native/package.json')), 'c');
} catch {
  blake3Dir = null;
}
if (!blake3Dir || !existsSync(path.join(blake3Dir, 'blake3.h'))) {
  console.error('fuzz: cannot find @c4312/blake3-native/c (run npm install)');
  process.exit(1);
}

// ---------------------------------------------------------------- build

const x86 = osArch() === 'x64' && platform() !== 'win32';
const flavor = x86 ? opts.flavor : 'portable';
if (flavor !== opts.flavor) console.log(`fuzz: not x86-64 Unix, using --blake3 portable`);
const SAN = ['-fsanitize=fuzzer-no-link,address,undefined', '-fno-sanitize-recover=undefined', '-fno-omit-frame-pointer', '-O1', '-g'];
const NO_SIMD = ['-DBLAKE3_NO_SSE2', '-DBLAKE3_NO_SSE41', '-DBLAKE3_NO_AVX2', '-DBLAKE3_NO_AVX512', '-DBLAKE3_USE_NEON=0'];
// Without the .S kernels nothing reads past its input, so the multihash harness also hashes
// independent exact-size buffers (see fuzz/multihash.cc, "Strict mode").
const defines = [...(flavor === 'portable' ? NO_SIMD : []), ...(flavor === 'asm' ? [] : ['-DLAYERFS_FUZZ_STRICT_DEFAULT'])];
const blake3Sources = [
  ['blake3.c', []],
  ['blake3_dispatch.c', []],
  ['blake3_portable.c', []],
  ...(flavor === 'asm'
    ? ['sse2', 'sse41', 'avx2', 'avx512'].map((k) => [`blake3_${k}_x86-64_unix.S`, []])
    : flavor === 'c'
      ? [
          ['blake3_sse2.c', ['-msse2']],
          ['blake3_sse41.c', ['-msse4.1']],
          ['blake3_avx2.c', ['-mavx2']],
          ['blake3_avx512.c', ['-mavx512f', '-mavx512vl']],
        ]
      : []),
];
const flavorDir = path.join(outDir, flavor);
const objDir = path.join(flavorDir, 'obj');
mkdirSync(objDir, { recursive: true });

// Headers every object may depend on; any change rebuilds everything (the build is small).
const headers = [
  ...readdirSync(path.join(root, 'native')).filter((f) => f.endsWith('.h')).map((f) => path.join(root, 'native', f)),
  ...readdirSync(path.join(root, 'fuzz')).filter((f) => f.endsWith('.h')).map((f) => path.join(root, 'fuzz', f)),
  path.join(blake3Dir, 'blake3.h'),
  path.join(blake3Dir, 'blake3_impl.h'),
  // Included by a harness as source (xattr_list reaches functions internal to it).
  path.join(root, 'native/scan.cc'),
];
const newestHeader = Math.max(...headers.map((h) => statSync(h).mtimeMs));

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  const msg = `${r.stdout || ''}${r.stderr || ''}`.trim();
  if (r.status !== 0) {
    console.error(`fuzz: build failed:\n  ${cmd} ${args.join(' ')}\n${msg}`);
    process.exit(1);
  }
  if (msg) console.log(msg);
}

/** Compiles src to an object unless it is newer than src, the headers and its flags. */
function compile(src, args) {
  const key = createHash('sha256').update(JSON.stringify([src, args])).digest('hex').slice(0, 10);
  const obj = path.join(objDir, `${path.basename(path.dirname(src))}_${path.basename(src)}.${key}.o`);
  if (existsSync(obj)) {
    const t = statSync(obj).mtimeMs;
    if (t >= statSync(src).mtimeMs && t >= newestHeader) return obj;
  }
  run(src.endsWith('.cc') ? CXX : CC, [...args, '-c', src, '-o', obj]);
  return obj;
}

/** zstd's decoder sources (common/ and decompress/ .c files), from where the addon's build takes them. */
const zstdDir = path.resolve(root, spawnSync('node', [path.join(root, 'scripts/c-sources.cjs'), 'dir', 'zstd'], { encoding: 'utf8' }).stdout.trim());
function zstdDecoderSources() {
  return ['common', 'decompress'].flatMap((d) => readdirSync(path.join(zstdDir, d)).filter((f) => f.endsWith('.c')).map((f) => path.join(zstdDir, d, f)));
}

function build(name) {
  const h = HARNESSES[name];
  const inc = ['-I', path.join(root, 'native'), '-I', path.join(root, 'fuzz'), '-I', blake3Dir, '-I', zstdDir];
  const cxx = ['-std=c++17', '-Wall', '-Wextra', '-Wno-unused-parameter', ...SAN, ...defines, ...inc];
  const objs = [
    compile(path.join(root, 'fuzz', `${name}.cc`), cxx),
    ...h.sources.map((s) => compile(path.join(root, s), [...cxx, ...(SOURCE_FLAGS[s] ?? [])])),
    ...blake3Sources.map(([f, extra]) => {
      const src = path.join(blake3Dir, f);
      return f.endsWith('.S') ? compile(src, ['-g']) : compile(src, ['-std=c11', ...SAN, ...BLAKE3_COVERAGE, ...defines, ...extra, '-I', blake3Dir]);
    }),
    ...(h.zstd ? zstdDecoderSources().map((src) => compile(src, ['-std=c11', ...SAN, ...BLAKE3_COVERAGE, '-DZSTD_DISABLE_ASM', '-DZSTD_TRACE=0', '-I', zstdDir])) : []),
  ];
  const exe = path.join(flavorDir, name);
  const newestObj = Math.max(...objs.map((o) => statSync(o).mtimeMs));
  if (!existsSync(exe) || statSync(exe).mtimeMs < newestObj) {
    run(CXX, ['-fsanitize=fuzzer,address,undefined', '-g', ...objs, '-o', exe]);
  }
  return exe;
}

console.log(`fuzz: ${CXX}, BLAKE3 ${flavor} (${rel(blake3Dir)})`);
const exes = {};
for (const name of opts.harnesses) {
  exes[name] = build(name);
  console.log(`  built ${rel(exes[name])}`);
}
if (opts.buildOnly) process.exit(0);

// ---------------------------------------------------------------- run

const symbolizer = findTool(['llvm-symbolizer', 'llvm-symbolizer-14']);
const env = {
  ...process.env,
  ASAN_OPTIONS: process.env.ASAN_OPTIONS ?? 'detect_leaks=1:abort_on_error=0:handle_abort=1',
  UBSAN_OPTIONS: process.env.UBSAN_OPTIONS ?? 'print_stacktrace=1:halt_on_error=1',
  ...(symbolizer && !process.env.ASAN_SYMBOLIZER_PATH ? { ASAN_SYMBOLIZER_PATH: spawnSync('which', [symbolizer], { encoding: 'utf8' }).stdout.trim() } : {}),
};

const listFiles = (dir) => (existsSync(dir) ? readdirSync(dir).filter((f) => !f.startsWith('.')).map((f) => path.join(dir, f)) : []);

function prepareCorpus(name) {
  const seedDir = path.join(root, 'fuzz/corpus', name);
  const dir = opts.reuse ? path.join(outDir, 'corpus', name) : path.join(outDir, 'work', name, 'corpus');
  if (!opts.reuse) rmSync(path.dirname(dir), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of listFiles(seedDir)) cpSync(f, path.join(dir, path.basename(f)));
  return dir;
}

function parse(log) {
  const stat = (k) => {
    const m = log.match(new RegExp(`stat::${k}:\\s*(\\d+)`));
    return m ? Number(m[1]) : null;
  };
  let last = null;
  for (const m of log.matchAll(/^#(\d+)\s+\S+\s+cov: (\d+) ft: (\d+) corp: (\d+)\/(\S+)(?: lim: \d+)? exec\/s: (\d+)/gm)) last = m;
  return {
    executions: stat('number_of_executed_units') ?? (last ? Number(last[1]) : null),
    execPerSec: stat('average_exec_per_sec') ?? (last ? Number(last[6]) : null),
    newUnits: stat('new_units_added'),
    peakRssMb: stat('peak_rss_mb'),
    cov: last ? Number(last[2]) : null,
    ft: last ? Number(last[3]) : null,
    corpus: last ? `${last[4]} inputs / ${last[5]}` : null,
    artifacts: [...log.matchAll(/Test unit written to (\S+)/g)].map((m) => m[1]),
    // In replay mode libFuzzer writes no artifact: the failing input is the last file it ran.
    lastRunning: [...log.matchAll(/^Running: (.+)$/gm)].pop()?.[1] ?? null,
    failure: (log.match(/^==FUZZ CHECK FAILED==.*$/m) || log.match(/^(?:==\d+==ERROR: .*|SUMMARY: .*|.*runtime error: .*)$/m) || [null])[0],
  };
}

function fuzz(name) {
  const exe = exes[name];
  const h = HARNESSES[name];
  const findings = path.join(root, 'fuzz/findings', name);
  mkdirSync(findings, { recursive: true });
  const logDir = path.join(outDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const logFile = path.join(logDir, `${name}.log`);
  const common = [`-max_len=${h.maxLen}`, '-timeout=25', '-rss_limit_mb=2560', `-artifact_prefix=${findings}/`, '-print_final_stats=1'];
  let args;
  if (opts.seconds === 0) {
    // Replay: every seed and every kept finding once.
    const files = [...listFiles(path.join(root, 'fuzz/corpus', name)), ...listFiles(findings).filter((f) => !f.endsWith('.md'))];
    args = [...common, ...opts.extra, ...files];
  } else {
    args = [
      ...common,
      `-max_total_time=${opts.seconds}`,
      ...(opts.seed !== null ? [`-seed=${opts.seed}`] : []),
      ...h.args,
      ...opts.extra,
      prepareCorpus(name),
    ];
  }
  console.log(`\n== ${name}: ${opts.seconds === 0 ? 'replaying corpus' : `${opts.seconds} s`} (log: ${rel(logFile)})`);
  return new Promise((resolve) => {
    const child = spawn(exe, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = createWriteStream(logFile);
    let text = '';
    const onData = (d) => {
      log.write(d);
      text += d.toString();
      if (text.length > 4e6) text = text.slice(-2e6);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const started = Date.now();
    const tick = setInterval(() => {
      const last = [...text.matchAll(/^#(\d+)\s+\S+\s+cov: (\d+) ft: (\d+) corp: (\d+)\S*.*?exec\/s: (\d+)/gm)].pop();
      if (last) console.log(`  ${Math.round((Date.now() - started) / 1000)} s: ${last[1]} execs, cov ${last[2]}, ft ${last[3]}, corpus ${last[4]}, ${last[5]} exec/s`);
    }, 15000);
    child.on('close', (code, signal) => {
      clearInterval(tick);
      log.end();
      const r = parse(text);
      r.exitCode = code;
      r.signal = signal;
      r.seconds = (Date.now() - started) / 1000;
      // libFuzzer exits 0 after a clean run (and after replaying inputs that all pass).
      r.crashed = code !== 0 || r.artifacts.length > 0;
      if (listFiles(findings).length === 0) rmdirSync(findings);
      resolve(r);
    });
  });
}

const results = {};
for (const name of opts.harnesses) {
  const r = await fuzz(name);
  results[name] = r;
  if (r.crashed) {
    console.log(`  FINDING: ${r.failure ?? `exit ${r.exitCode ?? r.signal}`}`);
    if (r.artifacts.length === 0 && r.lastRunning) r.artifacts.push(r.lastRunning);
    for (const a of r.artifacts) {
      console.log(`  reproducer: ${rel(path.resolve(root, a))}`);
      console.log(`  replay:     ${rel(exes[name])} ${rel(path.resolve(root, a))}`);
    }
    const tail = readFileSync(path.join(outDir, 'logs', `${name}.log`), 'utf8').split('\n').slice(-40).join('\n');
    console.log(tail.replace(/^/gm, '  | '));
  }
}

const fmt = (v) => (v === null || v === undefined ? '-' : typeof v === 'number' ? v.toLocaleString('en-US') : v);
console.log('\nharness          executions      exec/s  new units  cov / ft       corpus                  findings');
for (const [name, r] of Object.entries(results)) {
  console.log(
    `${name.padEnd(16)} ${fmt(r.executions).padStart(10)} ${fmt(r.execPerSec).padStart(11)} ${fmt(r.newUnits).padStart(10)}  ${`${fmt(r.cov)} / ${fmt(r.ft)}`.padEnd(14)} ${fmt(r.corpus).padEnd(23)} ${r.crashed ? `CRASH (${r.artifacts.length} file${r.artifacts.length === 1 ? '' : 's'})` : 'none'}`,
  );
}
writeFileSync(
  path.join(outDir, 'last-run.json'),
  JSON.stringify({ date: new Date().toISOString(), seconds: opts.seconds, blake3: flavor, compiler: CXX, results }, null, 2) + '\n',
);
process.exit(Object.values(results).some((r) => r.crashed) ? 1 : 0);
