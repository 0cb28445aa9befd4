/**
 * Model-based test of reconciling commits: N Workspaces fork one Branch, each runs a random
 * edit script (line edits of shared text files, adds, deletes, binary edits, range edits through
 * `editWorkspaceFileRanges`), then they commit
 * in every order (N ≤ 4; a random order beyond). A model replays the same commits as three-way
 * merges of path → content maps: each commit must be Created when the model merges cleanly,
 * Conflicted with exactly the model's conflicting paths otherwise, and the final head must
 * equal the model's state. Most Conflicted commits are then resolved (each conflict with
 * --working-tree, --branch or --layer, chosen at random; --working-tree only on FUSE) and
 * committed again: the commit must take exactly the chosen version at each conflicting path
 * and merge the rest. Range edits follow the byte-level rule of docs/SDK.md: same-length
 * edits merge unless they cover one byte; once a side changed the length, its changes count as
 * one region from its first to its last edit, which must be apart from the other side's edits. Both projections; the Store is verified after each run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { diff3Merge } from 'node-diff3';
import { Client } from '../../lib/sdk/index.js';
import { detachStale, fuseAvailable } from '../../lib/fuse/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { rng } from '../helpers/random.js';

const SEED = Number(process.env.LAYERFS_SEED ?? Math.floor(Math.random() * 1e9));
console.log(`reconcile model seed ${SEED} (rerun with LAYERFS_SEED=${SEED})`);

type Tree = Map<string, string | Buffer>;
const TEXTS = ['t/a.txt', 't/b.txt', 'c.txt'];
const BIN = 'bin/data.bin';
/** Edited only by range edits; its bytes are distinct and every replacement byte is >= 0x80. */
const RB = 'bin/ranges.bin';
const RB_SIZE = 128;

function baseTree(): Tree {
  const t: Tree = new Map();
  for (const p of TEXTS) t.set(p, Array.from({ length: 12 }, (_, i) => `${p} line ${i}\n`).join(''));
  t.set(BIN, Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
  t.set(RB, Buffer.from(Array.from({ length: RB_SIZE }, (_, i) => i)));
  t.set('keep.txt', 'untouched\n');
  return t;
}

/** A range edit of RB in base coordinates (every Workspace starts from the base). */
interface Edit {
  start: number;
  deleteLength: number;
  bytes: Buffer;
}

type Op =
  | { op: 'line'; path: string; line: number; text: string }
  | { op: 'add'; path: string; text: string }
  | { op: 'delete'; path: string }
  /** A rename and a rewrite: what a new file that takes a deleted file's inode number looks like. */
  | { op: 'move'; from: string; to: string; text: string }
  | { op: 'binary'; byte: number }
  | { op: 'ranges'; edits: Edit[] };

/** Same-length edits (one or two, apart), or one edit that makes the file longer. */
function rangeEdits(r: () => number, ws: number): Edit[] {
  const fill = (n: number) => Buffer.from(Array.from({ length: n }, (_, k) => 0x80 | (ws * 20 + k)));
  if (r() < 0.5) {
    const a = Math.floor(r() * 100);
    const edits = [{ start: a, deleteLength: 1 + Math.floor(r() * 8), bytes: Buffer.alloc(0) }];
    if (r() < 0.5) edits.push({ start: a + edits[0]!.deleteLength + Math.floor(r() * 10), deleteLength: 1 + Math.floor(r() * 6), bytes: Buffer.alloc(0) });
    return edits.filter((e) => e.start + e.deleteLength <= RB_SIZE).map((e) => ({ ...e, bytes: fill(e.deleteLength) }));
  }
  const start = Math.floor(r() * (RB_SIZE + 1));
  const deleteLength = Math.min(Math.floor(r() * 5), RB_SIZE - start);
  return [{ start, deleteLength, bytes: fill(deleteLength + 1 + Math.floor(r() * 4)) }];
}

function applyEdits(base: Buffer, edits: Edit[]): Buffer {
  let out = base;
  for (const e of [...edits].sort((a, b) => b.start - a.start)) out = Buffer.concat([out.subarray(0, e.start), e.bytes, out.subarray(e.start + e.deleteLength)]);
  return out;
}

/** The model of the byte-level rule, from the edits themselves: the merged edits, or null for a conflict. */
function mergeEdits(head: Edit[], ws: Edit[]): Edit[] | null {
  if (head.length === 0 || ws.length === 0) return [...head, ...ws];
  const grows = (es: Edit[]) => es.some((e) => e.bytes.length !== e.deleteLength);
  const spans = (es: Edit[]) => es.map((e) => [e.start, e.start + e.deleteLength] as const);
  const regions = (es: Edit[]) => (grows(es) ? [[Math.min(...es.map((e) => e.start)), Math.max(...es.map((e) => e.start + e.deleteLength))] as const] : spans(es));
  const lengthKept = !grows(head) && !grows(ws);
  for (const [hs, he] of regions(head)) {
    for (const [ws0, we] of regions(ws)) {
      const clash = lengthKept ? hs < we && ws0 < he : hs <= we && ws0 <= he;
      if (clash) return null;
    }
  }
  return [...head, ...ws];
}

function script(r: () => number, ws: number, tree: Tree): Op[] {
  const ops: Op[] = [];
  const n = 1 + Math.floor(r() * 3);
  for (let i = 0; i < n; i++) {
    const k = r();
    const texts = TEXTS.filter((p) => tree.has(p));
    if (k < 0.55 && texts.length > 0) ops.push({ op: 'line', path: texts[Math.floor(r() * texts.length)]!, line: Math.floor(r() * 12), text: `edited by w${ws}.${i}` });
    else if (k < 0.75) ops.push({ op: 'add', path: r() < 0.2 ? 'shared-new.txt' : `new/w${ws}-${i}.txt`, text: `added by w${ws}.${i}\n` });
    else if (k < 0.8 && texts.length > 0) ops.push({ op: 'move', from: texts[Math.floor(r() * texts.length)]!, to: r() < 0.3 ? 'shared-new.txt' : `new/m${ws}-${i}.txt`, text: `moved by w${ws}.${i}\n` });
    else if (k < 0.85 && texts.length > 0) ops.push({ op: 'delete', path: texts[Math.floor(r() * texts.length)]! });
    else if (k < 0.9 || ops.some((o) => o.op === 'ranges')) ops.push({ op: 'binary', byte: Math.floor(r() * 64) });
    else ops.push({ op: 'ranges', edits: rangeEdits(r, ws) });
  }
  return ops;
}

function apply(tree: Tree, ops: Op[], ws: number): Tree {
  const t: Tree = new Map(tree);
  for (const o of ops) {
    if (o.op === 'line') {
      const cur = t.get(o.path);
      if (typeof cur !== 'string') continue;
      const lines = cur.split('\n');
      lines[o.line] = o.text;
      t.set(o.path, lines.join('\n'));
    } else if (o.op === 'add') t.set(o.path, o.text);
    else if (o.op === 'move') {
      if (!t.has(o.from)) continue;
      t.delete(o.from);
      t.set(o.to, o.text);
    }
    else if (o.op === 'delete') t.delete(o.path);
    else if (o.op === 'ranges') t.set(RB, applyEdits(t.get(RB) as Buffer, o.edits));
    else {
      const b = Buffer.from(t.get(BIN) as Buffer);
      b[o.byte] = (ws * 37 + o.byte) & 0xff;
      t.set(BIN, b);
    }
  }
  return t;
}

const same = (a: string | Buffer | undefined, b: string | Buffer | undefined) => (a === undefined || b === undefined ? a === b : Buffer.from(a).equals(Buffer.from(b)));
const lines = (s: string) => (s.length === 0 ? [] : s.split(/(?<=\n)/));

/** Same-length binary content: each byte from the side that changed it, null when both did differently. */
function mergeSameLength(b: Buffer, h: Buffer, w: Buffer): Buffer | null {
  const out = Buffer.from(h);
  for (let i = 0; i < b.length; i++) {
    if (w[i] === b[i]) continue;
    if (h[i] !== b[i] && h[i] !== w[i]) return null;
    out[i] = w[i]!;
  }
  return out;
}

const rangesOf = (ops: Op[]) => ops.flatMap((o) => (o.op === 'ranges' ? o.edits : []));

/** The model's three-way result: the merged tree and RB's edits, or the conflicting paths. */
function model(base: Tree, head: Tree, ws: Tree, headEdits: Edit[], wsEdits: Edit[]): { tree: Tree; edits: Edit[]; conflicts: string[] } {
  const out: Tree = new Map(head);
  const conflicts: string[] = [];
  let edits = headEdits;
  for (const p of new Set([...base.keys(), ...head.keys(), ...ws.keys()])) {
    const b = base.get(p);
    const h = head.get(p);
    const w = ws.get(p);
    if (same(w, b) || same(h, w)) continue;
    if (same(h, b)) {
      if (w === undefined) out.delete(p);
      else out.set(p, w);
      continue;
    }
    if (typeof b === 'string' && typeof h === 'string' && typeof w === 'string') {
      const regions = diff3Merge(lines(h), lines(b), lines(w), { excludeFalseConflicts: true });
      if (regions.every((x) => x.ok)) {
        out.set(p, regions.flatMap((x) => x.ok!).join(''));
        continue;
      }
    }
    if (p === RB) {
      const merged = mergeEdits(headEdits, wsEdits);
      if (merged) {
        out.set(p, applyEdits(b as Buffer, merged));
        edits = merged;
        continue;
      }
    } else if (Buffer.isBuffer(b) && Buffer.isBuffer(h) && Buffer.isBuffer(w) && b.length === h.length && b.length === w.length) {
      const merged = mergeSameLength(b, h, w);
      if (merged) {
        out.set(p, merged);
        continue;
      }
    }
    conflicts.push(p);
  }
  if (same(head.get(RB), base.get(RB))) edits = wsEdits;
  return { tree: out, edits, conflicts: conflicts.sort() };
}

function writeTree(dir: string, t: Tree): void {
  for (const [p, c] of t) {
    mkdirSync(join(dir, p, '..'), { recursive: true });
    writeFileSync(join(dir, p), c);
  }
}

/** Files only (directories follow from them), as path → content. */
function readTree(dir: string, rel = ''): Tree {
  const t: Tree = new Map();
  for (const name of readdirSync(join(dir, rel))) {
    const p = rel ? `${rel}/${name}` : name;
    if (statSync(join(dir, p)).isDirectory()) for (const [k, v] of readTree(dir, p)) t.set(k, v);
    else t.set(p, p.startsWith('bin/') ? readFileSync(join(dir, p)) : readFileSync(join(dir, p), 'utf8'));
  }
  return t;
}

function assertTree(actual: Tree, expected: Tree, what: string): void {
  const show = (t: Tree) => [...t.entries()].map(([k, v]) => [k, Buffer.from(v).toString('hex')]).sort();
  assert.deepEqual(show(actual), show(expected), what);
}

/** Outcomes seen, printed at the end so a run that never conflicts (or never merges) shows. */
const tally = { created: 0, conflicted: 0, reconciled: 0, resolved: 0 };
process.on('exit', () => console.log(`reconcile model outcomes ${JSON.stringify(tally)}`));

function permutations(n: number): number[][] {
  if (n === 1) return [[0]];
  return permutations(n - 1).flatMap((p) => Array.from({ length: n }, (_, i) => [...p.slice(0, i), n - 1, ...p.slice(i)]));
}

type Resolution = 'working-tree' | 'branch' | 'layer';
/** The share of Conflicted commits whose conflicts are then resolved and committed again. */
const RESOLVE_RATE = 0.6;

/**
 * Resolves every conflict of a Conflicted commit (each with `how()`) and commits again. The
 * model: the Workspace then holds the chosen version of each conflicting path (its own, the
 * head's or its base's), and the commit takes exactly that version there, merging the rest.
 */
async function resolveAndCommit(client: Client, id: string, how: () => Resolution, sides: { base: Tree; head: Tree; ws: Tree; headEdits: Edit[]; wsEdits: Edit[] }, what: string): Promise<{ ws: Tree; head: Tree; edits: Edit[]; label: string }> {
  const { base, head } = sides;
  const chosen = new Map<string, Resolution>();
  for (const c of client.workspaceConflicts(id)) {
    const way = chosen.get(c.path) ?? how();
    client.resolveWorkspaceConflict(id, c.id, way);
    chosen.set(c.path, way);
  }
  tally.resolved++;
  const ws: Tree = new Map(sides.ws);
  let wsEdits = sides.wsEdits;
  for (const [p, way] of chosen) {
    const v = way === 'working-tree' ? sides.ws.get(p) : way === 'branch' ? head.get(p) : base.get(p);
    if (v === undefined) ws.delete(p);
    else ws.set(p, v);
    if (p === RB) wsEdits = way === 'working-tree' ? wsEdits : way === 'branch' ? sides.headEdits : [];
  }
  const r = await client.commitWorkspace(id, { message: 'resolved' });
  const resolvedWhat = `${what}, resolved ${JSON.stringify([...chosen])}`;
  assert.ok(r.outcome === 'Created' || r.outcome === 'UpToDate', `${resolvedWhat}: ${r.outcome} ${r.outcome === 'Conflicted' ? JSON.stringify(r.conflicts.map((c) => c.message)) : ''}`);
  const m = model(base, head, ws, sides.headEdits, wsEdits);
  assert.deepEqual(m.conflicts.filter((p) => !chosen.has(p)), [], `${resolvedWhat}: the model merges the rest`);
  for (const p of chosen.keys()) {
    const v = ws.get(p);
    if (v === undefined) m.tree.delete(p);
    else m.tree.set(p, v);
  }
  const edits = chosen.has(RB) ? wsEdits : m.edits;
  return { ws, head: m.tree, edits, label: resolvedWhat };
}

async function run(projection: 'materialize' | 'fuse', n: number, order: number[], scripts: Op[][], tag: string, pick: () => number): Promise<void> {
  const dir = tempDir('layerfs-model-');
  const src = join(dir, 'src');
  const base = baseTree();
  writeTree(src, base);
  const client = Client.create(join(dir, 'store.sqlite'));
  const paths: string[] = [];
  try {
    const layer = (await client.initLayerStack({ name: 'p', source: src })).layer.id;
    client.forkBranch({ name: 'b', layer });
    const ws = [];
    const trees: Tree[] = [];
    for (let i = 0; i < n; i++) {
      const at = join(dir, `w${i}`);
      paths.push(at);
      ws.push(await client.createWorkspace('b', { at, projection }));
      trees.push(apply(base, scripts[i]!, i));
      const present = new Set(base.keys());
      for (const o of scripts[i]!) {
        if (o.op === 'delete') {
          rmSync(join(at, o.path), { force: true });
          present.delete(o.path);
        } else if (o.op === 'move' && present.has(o.from)) {
          // The rewrite comes with writeTree below, into the same inode.
          mkdirSync(join(at, o.to, '..'), { recursive: true });
          renameSync(join(at, o.from), join(at, o.to));
          present.delete(o.from);
          present.add(o.to);
        } else if (o.op === 'add') present.add(o.path);
      }
      writeTree(at, new Map([...trees[i]!].filter(([p, c]) => p !== RB && !same(base.get(p), c))));
      const edits = rangesOf(scripts[i]!);
      if (edits.length > 0) client.editWorkspaceFileRanges(ws[i]!.id, edits.map((e) => ({ path: RB, start: e.start, deleteLength: e.deleteLength, replacement: e.bytes })));
    }
    let head = base;
    let headEdits: Edit[] = [];
    for (const i of order) {
      const m = model(base, head, trees[i]!, headEdits, rangesOf(scripts[i]!));
      const r = await client.commitWorkspace(ws[i]!.id, { message: `w${i}` });
      const what = `${tag} order ${order.join(',')} commit w${i}`;
      if (m.conflicts.length > 0) {
        assert.equal(r.outcome, 'Conflicted', what);
        tally.conflicted++;
        if (r.outcome === 'Conflicted') assert.deepEqual([...new Set(r.conflicts.map((c) => c.path))].sort(), m.conflicts, `${what}: ${JSON.stringify(r.conflicts.map((c) => c.message))}`);
        if (pick() < RESOLVE_RATE) {
          const ways: Resolution[] = projection === 'fuse' ? ['working-tree'] : ['working-tree', 'branch', 'layer'];
          const done = await resolveAndCommit(client, ws[i]!.id, () => ways[Math.floor(pick() * ways.length)]!, { base, head, ws: trees[i]!, headEdits, wsEdits: rangesOf(scripts[i]!) }, what);
          trees[i] = done.ws;
          head = done.head;
          headEdits = done.edits;
          assertTree(readTree(ws[i]!.path), head, `${done.label}: the Workspace shows the merged tree`);
        }
      } else {
        assert.ok(r.outcome === 'Created' || r.outcome === 'UpToDate', `${what}: ${r.outcome} ${r.outcome === 'Conflicted' ? JSON.stringify(r.conflicts) : ''}`);
        head = m.tree;
        headEdits = m.edits;
        tally.created++;
        if (r.outcome === 'Created' && r.reconciled) tally.reconciled++;
        assertTree(readTree(ws[i]!.path), head, `${what}: the Workspace shows the merged tree`);
      }
      const out = join(dir, `export-${i}`);
      client.export('b', out);
      assertTree(readTree(out), head, `${what}: the head`);
      rmSync(out, { recursive: true });
    }
    for (const w of ws) await client.endWorkspace(w.id, { discard: true });
    assertIntact(client);
  } finally {
    if (projection === 'fuse') {
      await client.stopDaemon({ discard: true }).catch(() => {});
      for (const p of paths) await detachStale(p).catch(() => false);
    }
    client.close();
  }
}

test('model: materialize, every commit order for N = 2, 3, 4; a random order for N = 6', { timeout: 600_000 }, async () => {
  const r = rng(SEED);
  for (const n of [2, 3, 4]) {
    const scripts = Array.from({ length: n }, (_, i) => script(r, i, baseTree()));
    for (const order of permutations(n)) await run('materialize', n, order, scripts, `seed ${SEED} n=${n}`, r);
  }
  const scripts = Array.from({ length: 6 }, (_, i) => script(r, i, baseTree()));
  const order = [0, 1, 2, 3, 4, 5].sort(() => r() - 0.5);
  await run('materialize', 6, order, scripts, `seed ${SEED} n=6`, r);
});

const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

test('model: FUSE, every commit order for N = 2 and 3', { skip: fuseSkip, timeout: 600_000 }, async () => {
  const r = rng(SEED ^ 0x5a5a);
  for (const n of [2, 3]) {
    const scripts = Array.from({ length: n }, (_, i) => script(r, i, baseTree()));
    for (const order of permutations(n)) await run('fuse', n, order, scripts, `seed ${SEED} fuse n=${n}`, r);
  }
});
