/**
 * Property test for the decoders of stored bytes: decodeNode, decodeInode, decodeExtentNode and
 * decodeRoot get random byte strings and mutations of valid encodings (bits flipped, bytes set to
 * edge values, truncated, extended, spliced with huge varints). Each call must either return a
 * value or throw a LayerFsError with code ERR_CORRUPT: no other exception type, no hang, and no
 * array allocated from a length prefix larger than the input could possibly hold.
 *
 * Seeded (LAYERFS_FUZZ_SEED, default below) and time-boxed (LAYERFS_FUZZ_MS per decoder, default
 * 600 ms); a failure prints the seed and the offending bytes in hex. See docs/FUZZING.md.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LayerFsError } from '../../lib/errors.js';
import { decodeNode, encodeNode, TreeKind, type TreeNode } from '../../lib/store/tree/pages.js';
import { ContentForm, decodeInode, encodeInode, InodeKind, type Inode } from '../../lib/store/tree/inode.js';
import { decodeExtentNode, encodeExtentNode, type ExtentNode } from '../../lib/store/tree/extents.js';
import { decodeRoot, encodeRoot } from '../../lib/store/tree/root.js';
import { Rng as Random } from '../helpers/random.js';

const OriginalArray = globalThis.Array;
const SEED = Number(process.env.LAYERFS_FUZZ_SEED ?? 0x1a7e5f5) >>> 0;
const BUDGET_MS = Number(process.env.LAYERFS_FUZZ_MS ?? 600);
const MAX_CASES = 200_000;

// ---------------------------------------------------------------- random numbers

/** The seeded generator (helpers/random.ts) with the draws this fuzzer uses. */
function rng(seed: number) {
  const r = new Random(seed);
  const next = (): number => r.u32();
  const below = (n: number): number => Math.floor((next() / 2 ** 32) * n);
  const bytes = (n: number): Buffer => {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) b[i] = next() & 0xff;
    return b;
  };
  /** Small numbers usually, large ones sometimes, up to 2^53 - 1. */
  const num = (): number => {
    switch (below(4)) {
      case 0:
        return below(128);
      case 1:
        return below(2 ** 16);
      case 2:
        return below(2 ** 32);
      default:
        return below(2 ** 21) * 2 ** 32 + below(2 ** 32);
    }
  };
  return { next, below, bytes, num };
}
type Rng = ReturnType<typeof rng>;

// ---------------------------------------------------------------- valid encodings

function validNode(r: Rng): Buffer {
  const kind = r.below(2) === 0 ? TreeKind.Inodes : TreeKind.Directory;
  const level = r.below(4) === 0 ? r.below(256) : r.below(3);
  const n = r.below(12);
  const node: TreeNode = { level, keys: [], vals: [] };
  const keys = new Map<string, Buffer>();
  for (let i = 0; i < n; i++) {
    const k = r.bytes(r.below(4) === 0 ? r.below(200) : r.below(16));
    keys.set(k.toString('hex'), k);
  }
  // Canonical pages hold strictly increasing keys.
  for (const k of [...keys.values()].sort(Buffer.compare)) {
    node.keys.push(k);
    node.vals.push(level === 0 ? r.bytes(r.below(4) === 0 ? r.below(300) : r.below(20)) : r.bytes(32));
  }
  return encodeNode(kind, node);
}

function validInode(r: Rng): Buffer {
  const kind = (1 + r.below(6)) as InodeKind;
  const parents = Array.from({ length: r.below(4) }, () => r.num());
  const form = kind === InodeKind.File || kind === InodeKind.Dir ? (r.below(3) as ContentForm) : ContentForm.None;
  const inode: Inode = {
    kind,
    mode: r.below(0o10000),
    uid: r.num(),
    gid: r.num(),
    mtimeNs: (BigInt(r.next()) << 32n | BigInt(r.next())) * (r.below(2) ? 1n : -1n),
    size: r.num(),
    nlink: 1,
    parents,
    form,
    content: form === ContentForm.None ? null : r.bytes(32),
    xattrs: [],
  };
  if (kind === InodeKind.Symlink) inode.target = r.bytes(r.below(40));
  if (kind === InodeKind.CharDev || kind === InodeKind.BlockDev) inode.rdev = r.num();
  const names = new Set<string>();
  for (let i = r.below(4); i > 0; i--) names.add(`user.${r.bytes(1 + r.below(6)).toString('hex')}`);
  inode.xattrs = [...names].map((n) => ({ name: Buffer.from(n), value: r.bytes(r.below(30)) }));
  return encodeInode(inode);
}

function validExtentNode(r: Rng): Buffer {
  const n = 1 + r.below(8);
  const node: ExtentNode = { level: r.below(4) === 0 ? r.below(256) : r.below(3), ids: [], lengths: [] };
  for (let i = 0; i < n; i++) {
    node.ids.push(r.bytes(32));
    node.lengths.push(r.num());
  }
  return encodeExtentNode(node);
}

function validRoot(r: Rng): Buffer {
  return encodeRoot({ inodes: r.bytes(32) });
}

// ---------------------------------------------------------------- mutations

/** LEB128 varints that claim huge counts or lengths. */
const HUGE_VARINTS = [
  [0xff, 0xff, 0x03], // 65535
  [0x80, 0x80, 0x80, 0x10], // 2^25 (V8's largest preallocated `new Array(n)`)
  [0xff, 0xff, 0xff, 0x0f], // 2^28 - 1
  [0xff, 0xff, 0xff, 0xff, 0x0f], // 2^32 - 1
  [0x80, 0x80, 0x80, 0x80, 0x10], // 2^32
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f], // 2^53 - 1
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // ~2^63 (9 bytes, the most uv() reads)
  [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], // 10 bytes: too long
];

function mutate(r: Rng, input: Buffer): Buffer {
  let b = Buffer.from(input);
  for (let rounds = 1 + r.below(3); rounds > 0; rounds--) {
    const at = b.length ? r.below(b.length) : 0;
    switch (r.below(9)) {
      case 0: // flip bits
        if (b.length) b[at] = b[at]! ^ (1 << r.below(8));
        break;
      case 1: // edge byte values
        if (b.length) b[at] = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x20][r.below(6)]!;
        break;
      case 2: // truncate
        b = b.subarray(0, r.below(b.length + 1));
        break;
      case 3: // extend with random bytes
        b = Buffer.concat([b, r.bytes(1 + r.below(40))]);
        break;
      case 4: // insert bytes
        b = Buffer.concat([b.subarray(0, at), r.bytes(1 + r.below(8)), b.subarray(at)]);
        break;
      case 5: // delete a range
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1 + r.below(8))]);
        break;
      case 6: // overwrite with a huge varint (a count or length prefix, often)
        b = Buffer.concat([b.subarray(0, at), Buffer.from(HUGE_VARINTS[r.below(HUGE_VARINTS.length)]!), b.subarray(at + 1)]);
        break;
      case 7: // duplicate a region
        b = Buffer.concat([b.subarray(0, at), b.subarray(at, at + 1 + r.below(40)), b.subarray(at)]);
        break;
      default: // a varint continuation run
        b = Buffer.concat([b.subarray(0, at), Buffer.alloc(1 + r.below(12), 0x80 | r.below(128)), b.subarray(at)]);
        break;
    }
  }
  return b;
}

function randomBytes(r: Rng): Buffer {
  const n = r.below(8) === 0 ? r.below(400) : r.below(48);
  const b = r.bytes(n);
  // Plausible leading bytes make the decoders get past their first check more often.
  if (n > 0 && r.below(2)) b[0] = r.below(8);
  if (n > 1 && r.below(2)) b[1] = r.below(4);
  return b;
}

// ---------------------------------------------------------------- the allocation guard

/** Thrown (instead of allocating) when a decoder asks for an array longer than its input. */
class OversizedArray extends Error {
  constructor(readonly length: number) {
    super(`new Array(${length})`);
  }
}

/**
 * Runs fn with the global Array constructor wrapped so that `new Array(n)` (and `Array(n)`) with
 * n larger than `limit` throws OversizedArray before V8 allocates anything. Every element of a
 * decoded array takes at least one input byte, so limit = the input length is a sound bound.
 */
function withArrayGuard<T>(limit: number, fn: () => T): T {
  const RealArray = globalThis.Array;
  const check = (args: unknown[]) => {
    if (args.length === 1 && typeof args[0] === 'number' && args[0] > limit) throw new OversizedArray(args[0]);
  };
  globalThis.Array = new Proxy(RealArray, {
    construct(target, args, newTarget) {
      check(args);
      return Reflect.construct(target, args, newTarget === globalThis.Array ? target : newTarget);
    },
    apply(target, self, args) {
      check(args);
      return Reflect.apply(target, self, args);
    },
  });
  try {
    return fn();
  } finally {
    globalThis.Array = RealArray;
  }
}

// ---------------------------------------------------------------- the property

interface Decoder {
  name: string;
  decode: (b: Buffer) => unknown;
  reencode: (v: unknown) => Buffer;
  valid: (r: Rng) => Buffer;
  /** The smallest input whose count prefix makes the decoder ask for a 2^25-element array. */
  hugeCount: Buffer;
}

/** The page kind is the first byte of a page; the test decodes each page as the kind it claims. */
const pageKind = (b: Buffer): TreeKind => (b[0] === TreeKind.Directory ? TreeKind.Directory : TreeKind.Inodes);
let lastPageKind = TreeKind.Inodes;

const DECODERS: Decoder[] = [
  {
    name: 'decodeNode',
    decode: (b) => decodeNode((lastPageKind = pageKind(b)), b, 'page'),
    reencode: (v) => encodeNode(lastPageKind, v as TreeNode),
    valid: validNode,
    hugeCount: Buffer.from([0x01, 0x00, 0x80, 0x80, 0x80, 0x10]),
  },
  {
    name: 'decodeInode',
    decode: (b) => decodeInode(b, 7),
    reencode: (v) => encodeInode(v as Inode),
    valid: validInode,
    hugeCount: Buffer.from([0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x80, 0x80, 0x10]),
  },
  {
    name: 'decodeExtentNode',
    decode: (b) => decodeExtentNode(b, 'extent node'),
    reencode: (v) => encodeExtentNode(v as ExtentNode),
    valid: validExtentNode,
    hugeCount: Buffer.from([0x00, 0x80, 0x80, 0x80, 0x10]),
  },
  {
    name: 'decodeRoot',
    decode: (b) => decodeRoot(b, 'root'),
    reencode: (v) => encodeRoot(v as { inodes: Buffer }),
    valid: validRoot,
    hugeCount: Buffer.alloc(0), // no count prefix
  },
];

type Outcome =
  | { kind: 'value'; value: unknown }
  | { kind: 'corrupt' }
  | { kind: 'oversized'; length: number }
  | { kind: 'other'; error: unknown };

function run(d: Decoder, b: Buffer): Outcome {
  try {
    return { kind: 'value', value: withArrayGuard(b.length, () => d.decode(b)) };
  } catch (e) {
    if (e instanceof OversizedArray) return { kind: 'oversized', length: e.length };
    if (e instanceof LayerFsError && e.code === 'ERR_CORRUPT') return { kind: 'corrupt' };
    return { kind: 'other', error: e };
  }
}

/**
 * Whether a decoder still allocates arrays from unchecked count prefixes (the issue reported in
 * docs/FUZZING.md). While it does, oversized requests are counted and reported, not failed, so
 * the suite stays green; once fixed, any oversized request fails the property test.
 */
function hasAllocationIssue(d: Decoder): boolean {
  return d.hugeCount.length > 0 && run(d, d.hugeCount).kind === 'oversized';
}

const hex = (b: Buffer) => (b.length > 200 ? `${b.subarray(0, 200).toString('hex')}… (${b.length} bytes)` : b.toString('hex') || '(empty)');

test('a count larger than the remaining bytes is refused before any allocation', () => {
  // A count of 5 in a 3-byte extent node: refused as corrupt, never an array of 5 entries.
  const out = run(DECODERS[2]!, Buffer.from([0x00, 0x05, 0x00]));
  assert.equal(out.kind, 'corrupt');
  assert.equal(globalThis.Array, OriginalArray);
});

for (const d of DECODERS) {
  test(`${d.name}: returns a value or throws ERR_CORRUPT on random and mutated bytes`, { timeout: 60_000 }, (t) => {
    const knownIssue = hasAllocationIssue(d);
    const r = rng(SEED ^ [...d.name].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 0x01000193), 0x811c9dc5));
    const stats = { cases: 0, values: 0, corrupt: 0, oversized: 0, nonCanonical: 0, validRoundTrips: 0 };
    let worstMs = 0;
    let worstCase: Buffer = Buffer.alloc(0);
    let oversizedExample: Buffer | null = null;
    let nonCanonicalExample: Buffer | null = null;
    const deadline = performance.now() + BUDGET_MS;

    while (stats.cases < MAX_CASES && (stats.cases % 64 !== 0 || performance.now() < deadline)) {
      stats.cases++;
      const pick = r.below(10);
      let input: Buffer;
      if (pick === 0) {
        // A valid encoding: must decode and re-encode to the same bytes.
        input = d.valid(r);
        const out = run(d, input);
        assert.equal(out.kind, 'value', `${d.name} refused a valid encoding (seed ${SEED}): ${hex(input)}`);
        assert.ok(d.reencode((out as { value: unknown }).value).equals(input), `${d.name} round trip (seed ${SEED}): ${hex(input)}`);
        stats.validRoundTrips++;
        stats.values++;
        continue;
      }
      input = pick <= 2 ? randomBytes(r) : mutate(r, d.valid(r));
      const t0 = performance.now();
      const out = run(d, input);
      const ms = performance.now() - t0;
      if (ms > worstMs) {
        worstMs = ms;
        worstCase = input;
      }
      switch (out.kind) {
        case 'value':
          stats.values++;
          // Accepting bytes that do not re-encode to themselves (non-minimal varints, values
          // above 2^53) is allowed by the property; it is counted for the report.
          if (!d.reencode(out.value).equals(input)) {
            stats.nonCanonical++;
            nonCanonicalExample ??= input;
          }
          break;
        case 'corrupt':
          stats.corrupt++;
          break;
        case 'oversized':
          stats.oversized++;
          oversizedExample ??= input;
          if (!knownIssue) assert.fail(`${d.name} asked for new Array(${out.length}) from ${input.length} input bytes (seed ${SEED}): ${hex(input)}`);
          break;
        case 'other':
          assert.fail(
            `${d.name} threw ${(out.error as Error)?.constructor?.name ?? typeof out.error}: ${(out.error as Error)?.message ?? String(out.error)} (seed ${SEED}) on ${hex(input)}`,
          );
      }
    }
    assert.ok(worstMs < 1000, `${d.name} took ${worstMs.toFixed(1)} ms on ${hex(worstCase)}`);
    t.diagnostic(
      `seed ${SEED}: ${stats.cases} cases, ${stats.values} values (${stats.validRoundTrips} valid round trips, ${stats.nonCanonical} non-canonical accepted), ` +
        `${stats.corrupt} ERR_CORRUPT, ${stats.oversized} oversized array requests, slowest ${worstMs.toFixed(2)} ms`,
    );
    if (nonCanonicalExample) t.diagnostic(`non-canonical input accepted: ${hex(nonCanonicalExample)}`);
    if (oversizedExample) t.diagnostic(`known issue: oversized array request, e.g. ${hex(oversizedExample)}`);
  });
}

test('long varint runs are rejected at once (no hang)', () => {
  for (const d of DECODERS) {
    for (const fill of [0x80, 0xff]) {
      const input = Buffer.concat([d.valid(rng(SEED)).subarray(0, 2), Buffer.alloc(1 << 20, fill)]);
      const t0 = performance.now();
      const out = run(d, input);
      const ms = performance.now() - t0;
      assert.ok(out.kind === 'corrupt' || out.kind === 'oversized', `${d.name}: ${out.kind} on a run of 0x${fill.toString(16)}`);
      assert.ok(ms < 100, `${d.name} took ${ms.toFixed(1)} ms on 1 MiB of 0x${fill.toString(16)}`);
    }
  }
});

// The known issue, as a to-do test: it reports failures without failing the suite, and turns into
// an ordinary test once every decoder checks its count prefixes.
const anyIssue = DECODERS.some(hasAllocationIssue);
test(
  'count prefixes are checked against the input before allocating',
  { todo: anyIssue ? 'decoders call new Array(count) with an unchecked count (docs/FUZZING.md)' : false },
  () => {
    for (const d of DECODERS.filter((x) => x.hugeCount.length > 0)) {
      // 2^25 (V8 preallocates: 256-512 MiB), 2^32 - 1 (sparse) and 2^32 (RangeError) elements.
      const base = d.hugeCount.subarray(0, d.hugeCount.length - 4);
      for (const count of [[0x80, 0x80, 0x80, 0x10], [0xff, 0xff, 0xff, 0xff, 0x0f], [0x80, 0x80, 0x80, 0x80, 0x10]]) {
        const input = Buffer.concat([base, Buffer.from(count)]);
        const out = run(d, input);
        assert.equal(out.kind, 'corrupt', `${d.name} on ${hex(input)}: ${out.kind}${out.kind === 'oversized' ? ` new Array(${out.length})` : ''}`);
      }
    }
  },
);
