// Seeded mutation fuzzing of the read path over whole forged states (docs/FUZZING.md).
//
// A real Store is made from a generated tree (directories, small and large files with extent
// trees, symlinks, hard links, xattrs, a FIFO), and every object reachable from its state is
// copied into memory. Each execution mutates one to three of those objects (bit flips, edge
// bytes, truncation, extension, splices, varint bombs, and swapping a 32-byte reference for the
// id of another object, which builds cycles, fan-out and bombs) while keeping their ids, as a
// forger who re-hashes everything would; then it runs the read path over the mutated state:
//
//   decoders      decodeRoot / decodeNode / decodeInode / decodeExtentNode on the mutated bytes
//   ls + cat      an iterative walk of the namespace (FsView.readdir, inode, content, readRange)
//   verify        the structural checks of verify (checkNamespace)
//   export        every EXPORT_EVERY-th execution, exportTree into a fresh directory
//
// Every failure must be a LayerFsError; a read yields exactly the recorded size; export writes
// nothing outside its target and leaves nothing on failure; and when verify finds nothing, the
// walk and export succeed (verify is a complete oracle for what the read path refuses). Any
// other outcome is a finding, printed with the seed and execution number that reproduce it.
//
//   node --import tsx test/helpers/read-path-fuzz.ts --seed 1 --execs 100000 [--export-every 200]
//   node --import tsx test/helpers/read-path-fuzz.ts --decoders --seed 1 --execs 5000000
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { LayerFsError } from '../../lib/errors.js';
import { makeNode, setXattr } from '../../lib/native/index.js';
import { Client } from '../../lib/sdk/index.js';
import { exportTree, FsView, InodeKind, ObjectKind, readRange, removeTree, ROOT_SERIAL, Store, type Inode } from '../../lib/store/index.js';
import { decodeExtentNode } from '../../lib/store/tree/extents.js';
import { decodeInode } from '../../lib/store/tree/inode.js';
import { decodeNode, TreeKind, type PageIO, type TreeNode } from '../../lib/store/tree/pages.js';
import { decodeRoot } from '../../lib/store/tree/root.js';
import { checkNamespace, NamespaceMemo, type NamespaceSource } from '../../lib/store/verify-namespace.js';
import { Rng } from './random.js';

export interface FuzzStats {
  seed: number;
  execs: number;
  decoderExecs: number;
  walks: number;
  exports: number;
  verifyClean: number;
  typedErrors: Record<string, number>;
  findings: { exec: number; what: string }[];
  ms: number;
}

interface Obj {
  kind: ObjectKind;
  data: Buffer;
}

/** The seeded generator (helpers/random.ts) with the draws this fuzzer uses. */
function rng(seed: number) {
  const r = new Rng(seed);
  const next = (): number => r.u32();
  return { next, below: (n: number) => Math.floor((next() / 2 ** 32) * n) };
}

/** A generated tree imported into a temporary Store; returns every object of its state, in memory. */
async function baseState(work: string): Promise<{ rootId: Buffer; objects: Map<string, Obj> }> {
  const src = join(work, 'src');
  mkdirSync(join(src, 'd/e/f'), { recursive: true });
  mkdirSync(join(src, 'empty'));
  writeFileSync(join(src, 'a.txt'), 'hello\n');
  writeFileSync(join(src, 'd/b.txt'), 'b'.repeat(300));
  writeFileSync(join(src, 'd/e/f/deep.txt'), 'deep\n');
  writeFileSync(join(src, 'empty.txt'), '');
  const big = Buffer.alloc(300_000);
  for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24;
  writeFileSync(join(src, 'big.bin'), big);
  symlinkSync('a.txt', join(src, 'link'));
  writeFileSync(join(src, 'hard1'), 'linked\n');
  const { linkSync } = await import('node:fs');
  linkSync(join(src, 'hard1'), join(src, 'd/hard2'));
  setXattr(join(src, 'a.txt'), 'user.note', 'x');
  makeNode(Buffer.from(join(src, 'fifo')), 'p', 0o644);
  for (let i = 0; i < 40; i++) writeFileSync(join(src, `many-${i}`), `${i}\n`);
  const storePath = join(work, 'base.sqlite');
  const c = Client.create(storePath);
  let rootId: Buffer;
  try {
    const init = await c.initLayerStack({ name: 'p', source: src });
    rootId = Buffer.from(c.layer(init.layer.id).rootId, 'hex');
  } finally {
    c.close();
  }
  const store = Store.open(storePath, { readonly: true });
  const objects = new Map<string, Obj>();
  try {
    const rows = store.db.prepare('SELECT id, kind FROM objects').all() as { id: Buffer; kind: number }[];
    for (const r of rows) objects.set(r.id.toString('latin1'), { kind: r.kind, data: store.objects.get(r.id, r.kind) });
  } finally {
    store.close();
  }
  return { rootId, objects };
}

/** The objects as a forger's Store: ids are not re-hashed, so mutated bytes keep their id. */
class MemSource implements NamespaceSource {
  readonly pages: PageIO;
  /** `prefetch` is the reader's batching hint: everything is in memory here already. */
  readonly objects: { get(id: Uint8Array, kind?: ObjectKind): Buffer; prefetch(ids: readonly Uint8Array[]): void };

  constructor(private readonly map: Map<string, Obj>) {
    const get = (id: Uint8Array, kind?: ObjectKind): Buffer => {
      const o = this.map.get(Buffer.from(id).toString('latin1'));
      if (!o) throw new LayerFsError('ERR_CORRUPT', `object ${Buffer.from(id).toString('hex')} is missing from the Store`);
      if (kind !== undefined && o.kind !== kind) throw new LayerFsError('ERR_CORRUPT', `object has kind ${o.kind}, expected ${kind}`);
      return o.data;
    };
    this.objects = { get, prefetch: () => undefined };
    this.pages = {
      load: (kind: TreeKind, id: Buffer): TreeNode => decodeNode(kind, get(id, ObjectKind.Page), 'page'),
      save: () => {
        throw new Error('read only');
      },
    };
  }

  sizeOf(id: Buffer): number | null {
    return this.map.get(id.toString('latin1'))?.data.length ?? null;
  }
}

const EDGE = [0, 1, 0x7f, 0x80, 0xff, 0x2e, 0x2f];

/** Mutates `data` (a copy) in one of several ways; `ids` are real object ids to splice in. */
function mutate(r: ReturnType<typeof rng>, data: Buffer, ids: Buffer[], same: Buffer[]): Buffer {
  let b = Buffer.from(data);
  const pos = () => (b.length === 0 ? 0 : r.below(b.length));
  switch (r.below(9)) {
    case 0:
      if (b.length) b[pos()]! ^= 1 << r.below(8);
      break;
    case 1:
      if (b.length) b[pos()] = EDGE[r.below(EDGE.length)]!;
      break;
    case 2:
      b = b.subarray(0, pos());
      break;
    case 3: {
      const extra = Buffer.alloc(1 + r.below(40));
      for (let i = 0; i < extra.length; i++) extra[i] = r.below(256);
      const p = pos();
      b = Buffer.concat([b.subarray(0, p), extra, b.subarray(p)]);
      break;
    }
    case 4: {
      // A varint that claims a huge count or length.
      const p = pos();
      b = Buffer.concat([b.subarray(0, p), Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]), b.subarray(Math.min(b.length, p + 1))]);
      break;
    }
    case 5:
    case 6: {
      // Swap a 32-byte window for the id of another object: references now point elsewhere.
      if (b.length >= 32 && ids.length) {
        const p = r.below(b.length - 31);
        ids[r.below(ids.length)]!.copy(b, p);
      }
      break;
    }
    case 7: {
      // Splice with another object of the same kind.
      const other = same[r.below(same.length)];
      if (other && other.length) {
        const p = pos();
        const q = r.below(other.length);
        b = Buffer.concat([b.subarray(0, p), other.subarray(q)]);
      }
      break;
    }
    default: {
      // Duplicate a range (repeated entries, names).
      if (b.length > 2) {
        const p = r.below(b.length - 1);
        const len = 1 + r.below(Math.min(64, b.length - p));
        b = Buffer.concat([b.subarray(0, p + len), b.subarray(p, p + len), b.subarray(p + len)]);
      }
    }
  }
  return b;
}

function isTyped(e: unknown): e is LayerFsError {
  return e instanceof LayerFsError;
}

/** Decodes bytes as every structure; only ERR_CORRUPT may come out. */
function decoders(data: Buffer): void {
  const calls = [() => decodeRoot(data, 'r'), () => decodeNode(TreeKind.Directory, data, 'p'), () => decodeNode(TreeKind.Inodes, data, 'p'), () => decodeInode(data, 7), () => decodeExtentNode(data, 'e')];
  for (const f of calls) {
    try {
      f();
    } catch (e) {
      if (!isTyped(e)) throw e;
    }
  }
}

/** An iterative ls -R + cat of the state (bounded), checking that reads yield exactly `size` bytes. */
function walk(view: FsView, src: MemSource, r: ReturnType<typeof rng>): number {
  const stack = [ROOT_SERIAL];
  const seen = new Set<number>([ROOT_SERIAL]);
  let visited = 0;
  while (stack.length > 0 && visited < 5000) {
    const dir = view.inode(stack.pop()!);
    for (const e of view.readdir(dir)) {
      visited++;
      const n: Inode = view.inode(e.serial);
      if (n.kind === InodeKind.Dir) {
        if (!seen.has(e.serial)) stack.push(e.serial);
        seen.add(e.serial);
      } else if (n.kind === InodeKind.File) {
        let total = 0;
        for (const piece of view.content(n)) total += piece.length;
        if (total !== n.size) throw new Error(`cat yielded ${total} bytes of a ${n.size}-byte file`);
        const offset = r.below(n.size + 2);
        const length = r.below(n.size + 2);
        let got = 0;
        for (const piece of readRange(src.objects as never, n, { offset, length })) got += piece.length;
        const want = Math.max(0, Math.min(n.size, offset + length) - Math.min(offset, n.size));
        if (got !== want) throw new Error(`range read yielded ${got} bytes, wanted ${want}`);
      }
    }
  }
  return visited;
}

export async function runReadPathFuzz(opts: { seed: number; execs: number; exportEvery?: number; log?: (s: string) => void }): Promise<FuzzStats> {
  const t0 = performance.now();
  const work = mkdtempSync(join(tmpdir(), 'layerfs-fuzz-'));
  const stats: FuzzStats = { seed: opts.seed, execs: 0, decoderExecs: 0, walks: 0, exports: 0, verifyClean: 0, typedErrors: {}, findings: [], ms: 0 };
  try {
    const base = await baseState(work);
    const keys = [...base.objects.keys()];
    const ids = keys.map((k) => Buffer.from(k, 'latin1'));
    const byKind = new Map<ObjectKind, Buffer[]>();
    for (const o of base.objects.values()) (byKind.get(o.kind) ?? byKind.set(o.kind, []).get(o.kind)!).push(o.data);
    // Structure objects are what the namespace is made of; content is mutated less often.
    const structural = keys.filter((k) => base.objects.get(k)!.kind !== ObjectKind.Chunk && base.objects.get(k)!.kind !== ObjectKind.Blob);
    const r = rng(opts.seed);
    const exportEvery = opts.exportEvery ?? 200;
    const sandbox = join(work, 'sandbox');
    mkdirSync(sandbox);
    for (let i = 0; i < opts.execs; i++) {
      stats.execs++;
      const map = new Map(base.objects);
      const n = 1 + r.below(3);
      for (let m = 0; m < n; m++) {
        const pool = r.below(8) === 0 ? keys : structural;
        const key = pool[r.below(pool.length)]!;
        const o = map.get(key)!;
        const data = mutate(r, o.data, ids, byKind.get(o.kind) ?? []);
        map.set(key, { kind: o.kind, data });
        try {
          decoders(data);
          stats.decoderExecs++;
        } catch (e) {
          stats.findings.push({ exec: i, what: `decoder: ${(e as Error).stack ?? e}` });
        }
      }
      const src = new MemSource(map);
      let verifyClean = false;
      try {
        verifyClean = checkNamespace(src, base.rootId, new NamespaceMemo()).length === 0;
        if (verifyClean) stats.verifyClean++;
      } catch (e) {
        stats.findings.push({ exec: i, what: `verify threw: ${(e as Error).stack ?? e}` });
      }
      let walkFailed: LayerFsError | null = null;
      try {
        stats.walks++;
        walk(new FsView(base.rootId, src.objects as never, src.pages), src, r);
      } catch (e) {
        if (!isTyped(e)) stats.findings.push({ exec: i, what: `walk: ${(e as Error).stack ?? e}` });
        else {
          walkFailed = e;
          stats.typedErrors[e.code] = (stats.typedErrors[e.code] ?? 0) + 1;
        }
      }
      if (verifyClean && walkFailed) stats.findings.push({ exec: i, what: `verify found nothing but the walk failed: ${walkFailed.code} ${walkFailed.message}` });
      if (i % exportEvery === 0 || (verifyClean && i % 20 === 0)) {
        stats.exports++;
        const target = join(sandbox, 'out');
        try {
          exportTree(new FsView(base.rootId, src.objects as never, src.pages), target);
        } catch (e) {
          if (!isTyped(e)) stats.findings.push({ exec: i, what: `export: ${(e as Error).stack ?? e}` });
          else {
            if (verifyClean) stats.findings.push({ exec: i, what: `verify found nothing but export failed: ${e.code} ${e.message}` });
            let left: string[] = [];
            try {
              left = readdirSync(target);
            } catch {
              /* removed: good */
            }
            if (left.length > 0) stats.findings.push({ exec: i, what: `a failed export left ${left.length} entries` });
          }
        }
        const outside = readdirSync(sandbox).filter((x) => x !== 'out');
        if (outside.length > 0) stats.findings.push({ exec: i, what: `export wrote outside its target: ${outside.join(', ')}` });
        removeTree(sandbox);
        mkdirSync(sandbox);
      }
      if (opts.log && i > 0 && i % 10_000 === 0) opts.log(`seed ${opts.seed}: ${i} execs, ${stats.findings.length} findings`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  stats.ms = Math.round(performance.now() - t0);
  return stats;
}

/**
 * Decoder-only executions over the same corpus and mutator (no walk): millions a minute, for the
 * bulk of a long run. Each execution decodes one mutated object as every structure.
 */
export async function runDecoderFuzz(opts: { seed: number; execs: number; log?: (s: string) => void }): Promise<FuzzStats> {
  const t0 = performance.now();
  const work = mkdtempSync(join(tmpdir(), 'layerfs-fuzz-'));
  const stats: FuzzStats = { seed: opts.seed, execs: 0, decoderExecs: 0, walks: 0, exports: 0, verifyClean: 0, typedErrors: {}, findings: [], ms: 0 };
  try {
    const base = await baseState(work);
    const objs = [...base.objects.values()].filter((o) => o.data.length < 4096);
    const ids = [...base.objects.keys()].map((k) => Buffer.from(k, 'latin1'));
    const same = objs.map((o) => o.data);
    const r = rng(opts.seed);
    for (let i = 0; i < opts.execs; i++) {
      stats.execs++;
      let data = objs[r.below(objs.length)]!.data;
      const rounds = 1 + r.below(4);
      for (let m = 0; m < rounds; m++) data = mutate(r, data, ids, same);
      try {
        decoders(data);
        stats.decoderExecs++;
      } catch (e) {
        stats.findings.push({ exec: i, what: `decoder: ${(e as Error).stack ?? e} on ${data.toString('hex')}` });
      }
      if (opts.log && i > 0 && i % 1_000_000 === 0) opts.log(`seed ${opts.seed}: ${i} decoder execs, ${stats.findings.length} findings`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  stats.ms = Math.round(performance.now() - t0);
  return stats;
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const seed = arg('seed', 1);
  const decodersOnly = process.argv.includes('--decoders');
  const s = decodersOnly
    ? await runDecoderFuzz({ seed, execs: arg('execs', 1_000_000), log: (m) => console.error(m) })
    : await runReadPathFuzz({ seed, execs: arg('execs', 10_000), exportEvery: arg('export-every', 200), log: (m) => console.error(m) });
  for (const f of s.findings.slice(0, 20)) console.log(`FINDING seed=${seed} exec=${f.exec}: ${f.what}`);
  console.log(JSON.stringify({ ...s, findings: s.findings.length }));
  process.exitCode = s.findings.length > 0 ? 1 : 0;
}
