/**
 * Model test of Workspace status and the committed diff: seeded random edit scripts run on a
 * plain directory and on a Workspace of each Projection. After each script the Workspace equals
 * the directory, and status and the diff of the Commit list exactly the paths whose state
 * differs, as an oracle of our own sees it (kinds, modes, mtimes, bytes, targets, link counts,
 * xattrs, empty directories), cross-checked on content by `git diff --name-status --no-renames`.
 * LAYERFS_MODEL_SCRIPTS sets the scripts per Projection, LAYERFS_MODEL_SEED the seed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { Client } from '../../lib/sdk/index.js';
import { getXattrs, setTimes, setXattr } from '../../lib/native/index.js';
import { fuseAvailable } from '../../lib/fuse/probe.js';
import { detachStale } from '../../lib/fuse/mounttab.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

const SCRIPTS = Number(process.env.LAYERFS_MODEL_SCRIPTS ?? 400);
const SEED = Number(process.env.LAYERFS_MODEL_SEED ?? Date.now() % 0x7fffffff);
const GIT_EVERY = 50;

/** xorshift32: one stream per Projection, from the printed seed. */
function prng(seed: number) {
  let x = seed >>> 0 || 1;
  return (n: number): number => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

const NAMES = ['f', 'g', 'h', 'stdio.h', 'x.tmp', 'c', 'a', 'b'];
const MODES = [0o644, 0o600, 0o755, 0o640];

/** One edit: steps run in order on a root; an error stops the edit (same errno on both sides). */
interface Op {
  text: string;
  run(root: string): void;
  /** Paths whose mtime (and their parents') the logical clock sets after the edit. */
  touched: string[];
}

type Pick = (n: number) => number;

/** Entries of the plain directory, for choosing edits deterministically. */
function entries(root: string): { files: string[]; dirs: string[]; all: string[] } {
  const files: string[] = [];
  const dirs: string[] = [''];
  const visit = (rel: string) => {
    for (const d of fs.readdirSync(join(root, rel), { withFileTypes: true }).sort((x, y) => (x.name < y.name ? -1 : 1))) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) {
        dirs.push(r);
        visit(r);
      } else files.push(r);
    }
  };
  visit('');
  return { files, dirs, all: [...files, ...dirs.slice(1)] };
}

const anyPath = (rnd: Pick, dirs: string[]) => {
  const d = dirs[rnd(dirs.length)]!;
  const n = NAMES[rnd(NAMES.length)]!;
  return d ? `${d}/${n}` : n;
};

const text = (rnd: Pick, tag: string) => `${tag} ${'x'.repeat(rnd(40))}\n`.repeat(1 + rnd(3));

/** A random edit chosen from the plain directory's current entries. */
function chooseOp(rnd: Pick, root: string, step: number): Op {
  const { files, dirs, all } = entries(root);
  const f = files.length ? files[rnd(files.length)]! : anyPath(rnd, dirs);
  const e = all.length ? all[rnd(all.length)]! : f;
  const p = anyPath(rnd, dirs);
  const q = anyPath(rnd, dirs);
  const body = text(rnd, `s${step}`);
  const at = (root_: string, r: string) => join(root_, r);
  switch (rnd(17)) {
    case 0:
      return { text: `write ${p}`, touched: [p], run: (r) => fs.writeFileSync(at(r, p), body) };
    case 1:
      return { text: `append ${f}`, touched: [f], run: (r) => fs.appendFileSync(at(r, f), body) };
    case 2: {
      const n = rnd(30);
      return { text: `truncate ${f} ${n}`, touched: [f], run: (r) => fs.truncateSync(at(r, f), n) };
    }
    case 3:
    case 4:
      return { text: `mv ${e} ${p}`, touched: [p, e], run: (r) => fs.renameSync(at(r, e), at(r, p)) };
    case 5: {
      const tmp = 'swap.tmp';
      return {
        text: `swap ${e} ${f}`,
        touched: [e, f],
        run: (r) => {
          fs.renameSync(at(r, e), at(r, tmp));
          fs.renameSync(at(r, f), at(r, e));
          fs.renameSync(at(r, tmp), at(r, f));
        },
      };
    }
    case 6:
      return { text: `ln ${f} ${p}`, touched: [p, f], run: (r) => fs.linkSync(at(r, f), at(r, p)) };
    case 7: {
      // Relative and descending: a write through a link never leaves the tree.
      const target = ['f', 'g', 'c/h', 'nowhere'][rnd(4)]!;
      return { text: `ln -s ${target} ${p}`, touched: [p], run: (r) => fs.symlinkSync(target, at(r, p)) };
    }
    case 8: {
      const m = MODES[rnd(MODES.length)]!;
      return { text: `chmod ${m.toString(8)} ${f}`, touched: [], run: (r) => fs.chmodSync(at(r, f), m) };
    }
    case 9:
      return { text: `touch ${e}`, touched: [e], run: () => undefined };
    case 10:
      return {
        text: `rm ${f}; write ${f}`,
        touched: [f],
        run: (r) => {
          fs.unlinkSync(at(r, f));
          fs.writeFileSync(at(r, f), body);
        },
      };
    case 11:
      return {
        text: `sed -i ${f}`,
        touched: [f],
        run: (r) => {
          const old = fs.readFileSync(at(r, f));
          const tmp = `${at(r, f)}.sedXXXX`;
          fs.writeFileSync(tmp, Buffer.concat([Buffer.from(`/* ${step} */\n`), old]));
          fs.chmodSync(tmp, fs.statSync(at(r, f)).mode & 0o7777);
          fs.renameSync(tmp, at(r, f));
        },
      };
    case 12:
      return { text: `cp ${f} ${q}`, touched: [q], run: (r) => fs.copyFileSync(at(r, f), at(r, q)) };
    case 13:
      return { text: `mkdir ${p}`, touched: [p], run: (r) => fs.mkdirSync(at(r, p)) };
    case 14:
      return { text: `rm -r ${e}`, touched: [e], run: (r) => fs.rmSync(at(r, e), { recursive: true }) };
    case 15:
      return { text: `rm ${f}`, touched: [f], run: (r) => fs.unlinkSync(at(r, f)) };
    default: {
      const v = `v${rnd(3)}`;
      return { text: `setfattr user.k=${v} ${f}`, touched: [], run: (r) => setXattr(at(r, f), 'user.k', v) };
    }
  }
}

/** Runs an edit, then sets the mtime of what it touched (and their parents) from a logical clock. */
function apply(root: string, op: Op, clockNs: bigint): string {
  let code = 'ok';
  try {
    op.run(root);
  } catch (e) {
    code = (e as NodeJS.ErrnoException).code ?? String(e);
  }
  const stamp = new Set<string>();
  for (const t of op.touched) {
    stamp.add(t);
    const cut = t.lastIndexOf('/');
    if (cut > 0) stamp.add(t.slice(0, cut));
  }
  for (const t of [...stamp].sort()) {
    try {
      // A write through a symlink changed its target: that gets the clock too.
      const real = fs.realpathSync(join(root, t));
      if (real !== join(root, t)) {
        setTimes(real, clockNs, clockNs);
        // It may have been created by the write (a dangling link): its directory changed too.
        setTimes(join(real, '..'), clockNs, clockNs);
      }
    } catch {
      // dangling, a loop, or gone
    }
    try {
      setTimes(join(root, t), clockNs, clockNs);
    } catch (e) {
      // What the edit left behind may not exist (rm, mv); that answer must match the other side.
      code += ` touch ${t}: ${String((e as { details?: { errno?: string } }).details?.errno ?? (e as Error).message)}`;
    }
  }
  return code;
}

/** Per path (the root left out): everything a state holds, as one comparable string. */
function snapshot(root: string, withGroups = false): Map<string, string> {
  const out = new Map<string, string>();
  const first = new Map<string, string>();
  const visit = (rel: string) => {
    for (const name of fs.readdirSync(join(root, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const abs = join(root, r);
      const st = fs.lstatSync(abs, { bigint: true });
      const kind = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : 'other';
      const parts = [kind, st.mtimeNs.toString()];
      if (kind !== 'symlink') parts.push((st.mode & 0o7777n).toString(8), getXattrs(abs).map((x) => `${x.name}=${x.value.toString('hex')}`).sort().join(','));
      if (kind === 'symlink') parts.push(fs.readlinkSync(abs));
      if (kind === 'file') parts.push(createHash('sha256').update(fs.readFileSync(abs)).digest('hex'));
      if (kind !== 'dir') {
        parts.push(`nlink=${st.nlink}`);
        const key = st.ino.toString();
        if (!first.has(key)) first.set(key, r);
        if (withGroups && st.nlink > 1n) parts.push(`group=${first.get(key)}`);
      }
      out.set(r, parts.join('|'));
      if (kind === 'dir') visit(r);
    }
  };
  visit('');
  return out;
}

/** Per path, its ctime: status is stat-based, so a change of ctime alone may show until a commit. */
function ctimes(root: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  const visit = (rel: string) => {
    for (const name of fs.readdirSync(join(root, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      const st = fs.lstatSync(join(root, r), { bigint: true });
      out.set(r, st.ctimeNs);
      if (st.isDirectory()) visit(r);
    }
  };
  visit('');
  return out;
}

/**
 * Paths whose state differs between two snapshots. A directory whose mtime alone changed is not
 * listed (its entries are), as a diff defines a change (lib/history/diff-fields.ts);
 * `strict` compares everything, for equality of two trees.
 */
function differing(a: Map<string, string>, b: Map<string, string>, strict = false): Set<string> {
  const out = new Set<string>();
  const dirMtimeOnly = (x: string, y: string) => x.startsWith('dir|') && y.startsWith('dir|') && x.split('|').slice(2).join('|') === y.split('|').slice(2).join('|');
  for (const [k, v] of a) {
    const w = b.get(k);
    if (w !== v && (strict || w === undefined || !dirMtimeOnly(v, w))) out.add(k);
  }
  for (const k of b.keys()) if (!a.has(k)) out.add(k);
  return out;
}

/** Paths whose content, kind, exec bit or link target differs: what git sees. */
function contentDiffering(a: Map<string, string>, b: Map<string, string>): Set<string> {
  const gitView = (v: string | undefined) => {
    if (!v) return undefined;
    const [kind, , mode, , hash] = v.split('|');
    if (kind === 'dir') return undefined;
    return kind === 'symlink' ? `l|${v.split('|')[2]}` : `f|${hash}|${parseInt(mode!, 8) & 0o100 ? 'x' : '-'}`;
  };
  const out = new Set<string>();
  for (const k of new Set([...a.keys(), ...b.keys()])) if (gitView(a.get(k)) !== gitView(b.get(k))) out.add(k);
  return out;
}

interface Reported {
  change: string;
  path: string;
  oldPath?: string;
  kind: string;
}

/** Checks one report (status or diff) against the oracle; returns failures as text. */
function judge(what: string, got: Reported[], want: Set<string>, after: Map<string, string>, mayShow = new Set<string>()): string[] {
  const bad: string[] = [];
  const paths = new Set<string>();
  for (const c of got) {
    paths.add(c.path);
    if (c.oldPath !== undefined) {
      paths.add(c.oldPath);
      if (after.has(c.oldPath)) bad.push(`${what}: renamed from ${c.oldPath}, which still exists`);
    }
    if (!['added', 'deleted', 'modified', 'renamed'].includes(c.change) || !c.kind) bad.push(`${what}: bad entry ${JSON.stringify(c)}`);
    if (c.change === 'added' && !after.has(c.path)) bad.push(`${what}: added ${c.path}, which does not exist`);
    if (c.change === 'deleted' && after.has(c.path)) bad.push(`${what}: deleted ${c.path}, which exists`);
  }
  const seen = new Map<string, number>();
  for (const c of got) seen.set(c.path, (seen.get(c.path) ?? 0) + 1);
  for (const [p, n] of seen) if (n > 1) bad.push(`${what}: ${p} reported ${n} times`);
  for (const p of want) if (!paths.has(p)) bad.push(`${what}: missing ${p}`);
  // A directory moved over an empty one of the same mode: its path's state is the same, and the
  // rename (its source disappeared) is true.
  const overEmpty = new Set(got.filter((c) => c.change === 'renamed' && c.kind === 'dir' && want.has(c.oldPath!)).map((c) => c.path));
  for (const p of paths) if (!want.has(p) && !mayShow.has(p) && !overEmpty.has(p)) bad.push(`${what}: extra ${p}`);
  return bad;
}

function gitDiffNames(git: (...a: string[]) => string): Set<string> {
  git('add', '-A');
  git('commit', '-q', '--allow-empty', '-m', 'x');
  const out = git('diff', '--name-status', '--no-renames', 'HEAD~1', 'HEAD');
  return new Set(out.split('\n').filter(Boolean).map((l) => l.split('\t')[1]!));
}

function diffEntries(client: Client, from: string, to: string): Reported[] {
  const out: Reported[] = [];
  let after: string | undefined;
  do {
    const page = client.diff(from, to, after ? { after } : {});
    out.push(...page.entries.map((e) => ({ change: e.change, path: e.path, oldPath: e.oldPath, kind: e.kind })));
    after = page.next;
  } while (after);
  return out;
}

function seedTree(root: string): void {
  fs.mkdirSync(join(root, 'a/c'), { recursive: true });
  fs.mkdirSync(join(root, 'b'));
  for (const [rel, body] of [['f', 'top\n'], ['a/stdio.h', 'int printf();\n'], ['a/g', 'g\n'], ['a/c/h', 'h\n'], ['b/f', 'bf\n']]) fs.writeFileSync(join(root, rel!), body!);
  fs.symlinkSync('f', join(root, 'a/link'));
  fs.linkSync(join(root, 'a/g'), join(root, 'b/g'));
  const t = 1_600_000_000n * 1_000_000_000n;
  for (const rel of ['f', 'a/stdio.h', 'a/g', 'a/c/h', 'b/f', 'a/link', 'a/c', 'a', 'b']) setTimes(join(root, rel), t, t);
}

async function runModel(projection: 'materialize' | 'fuse', seed: number): Promise<void> {
  const dir = tempDir();
  const plain = join(dir, 'plain');
  const src = join(dir, 'src');
  fs.mkdirSync(plain);
  fs.mkdirSync(src);
  seedTree(plain);
  seedTree(src);
  const gitDir = join(dir, 'git');
  const git = (...a: string[]) => execFileSync('git', [`--git-dir=${gitDir}`, `--work-tree=${plain}`, '-c', 'user.name=m', '-c', 'user.email=m@m', ...a], { encoding: 'utf8' });
  execFileSync('git', ['init', '-q', '--bare', gitDir]);
  git('add', '-A');
  git('commit', '-q', '-m', 'base');
  let gitBase = snapshot(plain);
  const client = Client.create(join(dir, 'store.sqlite'));
  const init = await client.initLayerStack({ name: 'p', source: src });
  client.forkBranch({ name: 'b', layer: init.layer.id });
  const at = join(dir, 'ws');
  const rnd = prng(seed);
  let clock = 1_700_000_000n * 1_000_000_000n;
  let head = init.layer.id;
  try {
    const ws = await client.createWorkspace('b', { at, projection });
    for (let n = 0; n < SCRIPTS; n++) {
      const before = snapshot(plain);
      const ctimeBefore = ctimes(plain);
      const script: string[] = [];
      const fail = (why: string[]) => assert.fail(`${projection} seed ${seed} script ${n}:\n  ${script.join('\n  ')}\n${why.join('\n')}`);
      const len = 1 + rnd(6);
      for (let k = 0; k < len; k++) {
        const op = chooseOp(rnd, plain, n);
        clock += 1_000_000_123n;
        const a = apply(plain, op, clock);
        const b = apply(at, op, clock);
        script.push(`${op.text} -> ${a}`);
        if (a !== b) fail([`the Workspace answered ${b}`]);
      }
      const after = snapshot(plain, true);
      const wsNow = snapshot(at, true);
      const unequal = [...differing(after, wsNow, true)].map((p) => `differs from the directory: ${p}\n    want ${after.get(p)}\n    got  ${wsNow.get(p)}`);
      if (unequal.length) fail(unequal);
      const afterNoGroups = snapshot(plain);
      const want = differing(before, afterNoGroups);
      const st = await client.workspaceStatus(ws.id);
      // A ctime-only change (chmod to the same mode, a rename and back) may show as modified; a
      // FUSE Workspace lists a path it wrote without comparing it with the base (same xattr).
      const ctimeOnly = new Set([...ctimes(plain)].filter(([k, c]) => ctimeBefore.has(k) && ctimeBefore.get(k) !== c).map(([k]) => k));
      const bad = judge(projection === 'fuse' ? 'fuse status' : 'status', st.changes.filter((c) => c.change !== 'modified' || want.has(c.path) || !(ctimeOnly.has(c.path) || (projection === 'fuse' && afterNoGroups.has(c.path)))), want, afterNoGroups);
      if (bad.length) fail([...bad, `status: ${JSON.stringify(st.changes)}`]);
      const r = await client.commitWorkspace(ws.id);
      // Directory mtimes are stored, so a Commit may hold only those (and list nothing).
      if (r.outcome === 'UpToDate') {
        if (want.size > 0) fail([`commit: UpToDate with changes`]);
      } else {
        if (r.outcome !== 'Created') fail([`commit: ${r.outcome}`]);
        if (r.outcome !== 'Created') return;
        const d = diffEntries(client, head, r.commit.id);
        const badDiff = judge('diff', d, want, afterNoGroups);
        if (badDiff.length) fail([...badDiff, `diff: ${JSON.stringify(d)}`]);
        head = r.commit.id;
      }
      if (!(await client.workspaceStatus(ws.id)).clean) fail(['status is not clean after the commit']);
      if ((n + 1) % GIT_EVERY === 0 || n === SCRIPTS - 1) {
        const g = gitDiffNames(git);
        const content = contentDiffering(gitBase, afterNoGroups);
        const mism = [...g].filter((p) => !content.has(p)).concat([...content].filter((p) => !g.has(p)));
        if (mism.length) fail([`the oracle and git disagree on ${mism.join(', ')}`]);
        gitBase = afterNoGroups;
      }
    }
    const out = join(dir, 'export');
    client.export('b', out);
    assert.deepEqual(snapshot(out, true), snapshot(plain, true), 'the Branch exports as the directory');
    await client.endWorkspace(ws.id);
    assertIntact(client);
  } finally {
    if (projection === 'fuse') {
      await client.stopDaemon({ discard: true }).catch(() => {});
      await detachStale(at).catch(() => false);
    }
    client.close();
  }
}

test(`status model: materialize (${SCRIPTS} scripts, seed ${SEED})`, { timeout: 900_000 }, async () => {
  console.log(`status model seed ${SEED} (LAYERFS_MODEL_SEED=${SEED}), ${SCRIPTS} scripts per Projection`);
  const t0 = performance.now();
  await runModel('materialize', SEED);
  console.log(`materialize: ${SCRIPTS} scripts in ${Math.round(performance.now() - t0)} ms`);
});

const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

test(`status model: fuse (${SCRIPTS} scripts, seed ${SEED})`, { skip: fuseSkip, timeout: 900_000 }, async () => {
  const t0 = performance.now();
  await runModel('fuse', SEED ^ 0x5bd1e995);
  console.log(`fuse: ${SCRIPTS} scripts in ${Math.round(performance.now() - t0)} ms`);
});
