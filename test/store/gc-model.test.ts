/**
 * Model test of retention and gc: random sequences of fork, commit, delete, pin, unpin, policy
 * changes and gc runs. The test keeps its own model of the history (Branches and their Commits,
 * fork bases, pins, the policy) and computes from it which states must stay and, by a walk of
 * its own over the format's decoders, which objects they reach (with delta bases). After every
 * gc the Store holds exactly that set, and exactly the Commit rows the model names (live Branches'
 * histories, pins and their ancestors); at the end every kept state exports as it was committed,
 * a pruned Commit whose row stays answers ERR_PRUNED, a removed one ERR_NOT_FOUND, and every
 * deleted Branch's log still says when it was deleted.
 * Seed: LAYERFS_TEST_SEED (printed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { keptCommits } from '../../lib/history/index.js';
import { decodeRoot } from '../../lib/store/tree/root.js';
import { decodeNode, TreeKind } from '../../lib/store/tree/pages.js';
import { ContentForm, decodeInode, InodeKind } from '../../lib/store/tree/inode.js';
import { decodeExtentNode } from '../../lib/store/tree/extents.js';
import { Codec } from '../../lib/store/codec.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { walkForCompare, type WalkRecord } from '../helpers/treewalk.js';
import { rng } from '../helpers/random.js';

const seed = Number(process.env.LAYERFS_TEST_SEED ?? Date.now() % 1_000_000);
console.log(`gc model seed=${seed} (rerun with LAYERFS_TEST_SEED=${seed})`);

/** SQL: a delta row (`o`) one of whose bases (up to four, 32 bytes each) is not stored. */
const BASE_MISSING = [0, 1, 2, 3]
  .map((k) => `(length(o.base) >= ${(k + 1) * 32} AND NOT EXISTS (SELECT 1 FROM objects b WHERE b.id = substr(o.base, ${k * 32 + 1}, 32)))`)
  .join(' OR ');

interface ModelBranch {
  name: string;
  /** Commit ids, newest first. */
  commits: string[];
  fork: string | null;
}

/** Every object id (hex) reachable from `roots`, walked breadth-first with the format's decoders, plus delta bases. */
function reachable(path: string, roots: Buffer[]): Set<string> {
  const s = Store.open(path, { readonly: true });
  try {
    const seen = new Set<string>();
    const queue: [Buffer, string][] = roots.map((r) => [r, 'root']);
    const base = s.db.prepare('SELECT base FROM objects WHERE id = ?').pluck();
    while (queue.length > 0) {
      const [id, what] = queue.shift()!;
      const hex = id.toString('hex');
      if (seen.has(hex)) continue;
      seen.add(hex);
      const b = base.get(id) as Buffer | null;
      if (b) for (let o = 0; o < b.length; o += 32) queue.push([b.subarray(o, o + 32), 'base']);
      if (what === 'leaf' || what === 'base') continue;
      const data = s.objects.get(id);
      if (what === 'root') queue.push([decodeRoot(data, 'root').inodes, 'inodes']);
      else if (what === 'inodes' || what === 'dir') {
        const kind = what === 'inodes' ? TreeKind.Inodes : TreeKind.Directory;
        const node = decodeNode(kind, data, 'page');
        if (node.level > 0) for (const c of node.vals) queue.push([c, what]);
        else if (kind === TreeKind.Inodes) {
          node.keys.forEach((k, i) => {
            const ino = decodeInode(node.vals[i]!, Number(k.readBigUInt64BE(0)));
            if (ino.form === ContentForm.None) return;
            if (ino.kind === InodeKind.Dir) queue.push([ino.content!, 'dir']);
            else queue.push([ino.content!, ino.form === ContentForm.Whole ? 'leaf' : 'extents']);
          });
        }
      } else if (what === 'extents') {
        const n = decodeExtentNode(data, 'extents');
        for (const c of n.ids) queue.push([c, n.level === 0 ? 'leaf' : 'extents']);
      }
    }
    return seen;
  } finally {
    s.close();
  }
}

function commitRows(path: string): string[] {
  const s = Store.open(path, { readonly: true });
  try {
    return (s.db.prepare('SELECT id FROM commits').pluck().all() as Buffer[]).map((b) => b.toString('hex')).sort();
  } finally {
    s.close();
  }
}

function storedIds(path: string): Set<string> {
  const s = Store.open(path, { readonly: true });
  try {
    return new Set((s.db.prepare('SELECT id FROM objects').pluck().all() as Buffer[]).map((b) => b.toString('hex')));
  } finally {
    s.close();
  }
}

test(`gc model: random create/delete/pin/policy sequences keep exactly what the model reaches (seed ${seed})`, async () => {
  const r = rng(seed);
  const pick = <T>(a: T[]): T => a[Math.floor(r() * a.length)]!;
  const dir = tempDir();
  const path = join(dir, 's.sqlite');
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'shared.txt'), 'shared line of text\n'.repeat(400));
  writeFileSync(join(src, 'large.bin'), seededBytes(seed, 200_000));
  const c = Client.create(path);
  const init = await c.initLayerStack({ name: 'm', source: src });
  const branches: ModelBranch[] = [];
  const trees = new Map<string, WalkRecord[]>();
  const rootOf = new Map<string, Buffer>([[`layer:${init.layer.id}`, Buffer.from(init.layer.rootId, 'hex')]]);
  const pins = new Set<string>();
  /** Commits a gc reclaimed: pruned for good, whatever the policy says later. */
  const gone = new Set<string>();
  /** Each Commit's parent: the model's own history links. */
  const parentOf = new Map<string, string | null>();
  const deletedNames: string[] = [];
  let policyN: number | null = null;
  let serial = 0;
  let gcs = 0;
  const ws = () => join(dir, `ws-${serial++}`);

  const modelKept = (): Set<string> => {
    const kept = new Set<string>();
    const live = new Set(branches.map((b) => b.name));
    for (const b of branches) {
      b.commits.forEach((id, i) => {
        if (i === 0 || policyN === null || i < policyN) kept.add(id);
      });
      if (b.fork && live.has(b.name)) kept.add(b.fork);
    }
    for (const id of gone) kept.delete(id);
    return kept;
  };
  /** The Commit rows gc must leave: every live Branch's history, and each pin with its ancestors. */
  const modelRows = (): string[] => {
    const rows = new Set(branches.flatMap((b) => b.commits));
    for (const id of pins) for (let at: string | null | undefined = id; at; at = parentOf.get(at)) rows.add(at);
    return [...rows].sort();
  };

  try {
    for (let step = 0; step < 60; step++) {
      const op = r();
      if (branches.length === 0 || op < 0.15) {
        const name = `b${serial++}`;
        const from = branches.filter((b) => b.commits.some((id) => !gone.has(id)));
        if (from.length > 0 && r() < 0.5) {
          const parent = pick(from);
          const at = pick(parent.commits.filter((id) => !gone.has(id)));
          c.forkBranch({ name, branch: parent.name, commit: at });
          branches.push({ name, commits: parent.commits.slice(parent.commits.indexOf(at)), fork: at });
        } else {
          c.forkBranch({ name, layer: init.layer.id });
          branches.push({ name, commits: [], fork: null });
        }
      } else if (op < 0.55) {
        const b = pick(branches);
        const at = ws();
        await c.createWorkspace(b.name, { at });
        writeFileSync(join(at, `f${serial}.bin`), seededBytes(seed + serial, 1000 + Math.floor(r() * 30_000)));
        const t = join(at, 'shared.txt');
        writeFileSync(t, readFileSync(t, 'utf8') + `edit ${serial}\n`);
        if (r() < 0.3) {
          const big = readFileSync(join(at, 'large.bin'));
          big.write(`x${serial}`, Math.floor(r() * 190_000));
          writeFileSync(join(at, 'large.bin'), big);
        }
        const tree = walkForCompare(at);
        const res = await c.commitWorkspace(at);
        assert.equal(res.outcome, 'Created');
        if (res.outcome === 'Created') {
          parentOf.set(res.commit.id, b.commits[0] ?? null);
          b.commits.unshift(res.commit.id);
          trees.set(res.commit.id, tree);
          rootOf.set(res.commit.id, Buffer.from(res.commit.rootId, 'hex'));
        }
        assert.equal((await c.endWorkspace(at)).outcome, 'Ended');
      } else if (op < 0.67) {
        const b = pick(branches);
        await c.deleteBranch(b.name);
        branches.splice(branches.indexOf(b), 1);
        deletedNames.push(b.name);
      } else if (op < 0.77) {
        const all = [...modelKept()];
        if (all.length > 0) {
          const id = pick(all);
          c.pin(id);
          pins.add(id);
        }
      } else if (op < 0.82) {
        if (pins.size > 0) {
          const id = pick([...pins]);
          c.unpin(`commit:${id}`);
          pins.delete(id);
        }
      } else if (op < 0.9) {
        policyN = pick([null, 1, 2, 3]);
        c.setRetention({ branchCommits: policyN, olderThanMs: policyN === null ? null : 0 });
      } else {
        // Between any two of gc's transactions, every object stored against another still has it.
        const probe = Store.open(path, { readonly: true });
        const orphaned = probe.db.prepare(`SELECT count(*) FROM objects o WHERE o.codec = ${Codec.Delta} AND (${BASE_MISSING})`).pluck();
        try {
          await c.gc({
            batchObjects: 1 + Math.floor(r() * 50),
            onProgress: (p) => assert.equal(orphaned.get(), 0, `a delta's base deleted before it (step ${step}, ${p.phase} ${p.done}/${p.total})`),
          });
        } finally {
          probe.close();
        }
        gcs++;
        const kept = modelKept();
        for (const id of rootOf.keys()) if (!id.startsWith('layer:') && !kept.has(id) && !pins.has(id)) gone.add(id);
        const s = Store.open(path, { readonly: true });
        const actual = keptCommits(s);
        s.close();
        assert.deepEqual([...actual].sort(), [...kept].sort(), `kept Commits after step ${step}`);
        assert.deepEqual(commitRows(path), modelRows(), `Commit rows after step ${step}`);
        const roots = [rootOf.get(`layer:${init.layer.id}`)!, ...[...kept, ...pins].map((id) => rootOf.get(id)!)];
        assert.deepEqual([...storedIds(path)].sort(), [...reachable(path, roots)].sort(), `objects after step ${step}`);
      }
    }
    await c.gc();
    const kept = new Set([...modelKept(), ...pins]);
    const rows = new Set(modelRows());
    assert.deepEqual(commitRows(path), [...rows].sort());
    for (const id of rootOf.keys()) {
      if (id.startsWith('layer:') || kept.has(id)) continue;
      const code = rows.has(id) ? 'ERR_PRUNED' : 'ERR_NOT_FOUND';
      assert.throws(() => c.ls(id), (e: unknown) => (e as { code?: string }).code === code, `${id}: ${code}`);
    }
    for (const name of deletedNames.filter((n) => !branches.some((b) => b.name === n))) {
      assert.throws(() => c.log(name), (e: unknown) => (e as { code?: string; details?: { deletedAt?: string } }).code === 'ERR_DELETED', name);
    }
    assert.deepEqual([...storedIds(path)].sort(), [...reachable(path, [rootOf.get(`layer:${init.layer.id}`)!, ...[...kept].map((id) => rootOf.get(id)!)])].sort());
    for (const id of kept) {
      const target = join(dir, `export-${id.slice(0, 12)}`);
      c.export(id, target);
      assert.deepEqual(walkForCompare(target), trees.get(id), `state ${id}`);
    }
    assertIntact(c);
    console.log(`gc model seed=${seed}: ${gcs + 1} gc runs, ${branches.length} Branches left, ${kept.size} kept Commits, ${rows.size} Commit rows of ${parentOf.size}`);
  } finally {
    c.close();
  }
});
