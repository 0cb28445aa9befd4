/**
 * One run of the status model (status-model.test.ts): `scripts` seeded edit scripts applied to a
 * plain directory and to a Workspace of one Projection, each followed by the checks: the
 * Workspace equals the directory, status and the Commit's diff list exactly the paths whose state
 * differs, status is clean after the commit, and (every GIT_EVERY scripts) the oracle agrees with
 * `git diff --name-status --no-renames` on content. Throws an AssertionError naming the seed, the
 * script and its edits.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { Client } from '../../lib/sdk/index.js';
import { setTimes } from '../../lib/native/index.js';
import { detachStale } from '../../lib/fuse/mounttab.js';
import { removeTree } from '../../lib/store/remove-tree.js';
import { assertIntact } from '../helpers/integrity.js';
import { apply, chooseOp, prng, type Pick } from './status-model-ops.js';
import { contentDiffering, differing, gitDiffNames, judge, observe, snapshot, type Observed, type Reported } from './status-model-oracle.js';

export type Projection = 'materialize' | 'fuse';

const GIT_EVERY = 50;

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

/** The state one run carries from script to script. */
interface Run {
  projection: Projection;
  seed: number;
  client: Client;
  wsId: string;
  plain: string;
  at: string;
  rnd: Pick;
  clock: bigint;
  head: string;
  /** The plain directory after the previous script. */
  last: Observed;
  git: (...a: string[]) => string;
  gitBase: Map<string, string>;
}

/** Runs script `n` on both sides and checks everything; throws on the first failure. */
async function script(run: Run, n: number, last: boolean): Promise<void> {
  const { client, plain, at, projection } = run;
  const lines: string[] = [];
  const fail = (why: string[]): never => assert.fail(`${projection} seed ${run.seed} script ${n}:\n  ${lines.join('\n  ')}\n${why.join('\n')}`);
  const len = 1 + run.rnd(6);
  for (let k = 0; k < len; k++) {
    const op = chooseOp(run.rnd, plain, n);
    run.clock += 1_000_000_123n;
    const a = apply(plain, op, run.clock);
    const b = apply(at, op, run.clock);
    lines.push(`${op.text} -> ${a}`);
    if (a !== b) fail([`the Workspace answered ${b}`]);
  }
  const now = observe(plain);
  const wsNow = snapshot(at, true);
  const unequal = [...differing(now.grouped, wsNow, true)].map((p) => `differs from the directory: ${p}\n    want ${now.grouped.get(p)}\n    got  ${wsNow.get(p)}`);
  if (unequal.length) fail(unequal);
  const want = differing(run.last.state, now.state);
  const st = await client.workspaceStatus(run.wsId);
  // A ctime-only change (chmod to the same mode, a rename and back) may show as modified; a
  // FUSE Workspace lists a path it wrote without comparing it with the base (same xattr).
  const before = run.last.ctimes;
  const ctimeOnly = new Set([...now.ctimes].filter(([k, c]) => before.has(k) && before.get(k) !== c).map(([k]) => k));
  const listed = st.changes.filter((c) => c.change !== 'modified' || want.has(c.path) || !(ctimeOnly.has(c.path) || (projection === 'fuse' && now.state.has(c.path))));
  const bad = judge(`${projection} status`, listed, want, now.state);
  if (bad.length) fail([...bad, `status: ${JSON.stringify(st.changes)}`]);
  const r = await client.commitWorkspace(run.wsId);
  // Directory mtimes are stored, so a Commit may hold only those (and list nothing).
  if (r.outcome === 'UpToDate') {
    if (want.size > 0) fail([`commit: UpToDate with changes`]);
  } else {
    if (r.outcome !== 'Created') return fail([`commit: ${r.outcome}`]);
    const d = diffEntries(client, run.head, r.commit.id);
    const badDiff = judge('diff', d, want, now.state);
    if (badDiff.length) fail([...badDiff, `diff: ${JSON.stringify(d)}`]);
    run.head = r.commit.id;
  }
  if (!(await client.workspaceStatus(run.wsId)).clean) fail(['status is not clean after the commit']);
  run.last = now;
  if ((n + 1) % GIT_EVERY === 0 || last) {
    const g = gitDiffNames(run.git);
    const content = contentDiffering(run.gitBase, now.state);
    const mism = [...g].filter((p) => !content.has(p)).concat([...content].filter((p) => !g.has(p)));
    if (mism.length) fail([`the oracle and git disagree on ${mism.join(', ')}`]);
    run.gitBase = now.state;
  }
}

/** `scripts` scripts from `seed` on a Workspace of `projection`, in a fresh Store. */
export async function runModel(projection: Projection, seed: number, scripts: number, onStart?: (dir: string) => void): Promise<void> {
  // Not the test helper's tempDir: this runs on worker threads, where node:test's hooks do not.
  const dir = fs.mkdtempSync(join(tmpdir(), 'layerfs-status-model-'));
  onStart?.(dir);
  try {
    await runIn(dir, projection, seed, scripts);
  } finally {
    removeTree(dir);
  }
}

async function runIn(dir: string, projection: Projection, seed: number, scripts: number): Promise<void> {
  const plain = join(dir, 'plain');
  const src = join(dir, 'src');
  fs.mkdirSync(plain);
  fs.mkdirSync(src);
  seedTree(plain);
  seedTree(src);
  const gitDir = join(dir, 'git');
  // git's stderr is kept with its error, not printed: its refresh warns about every indexed path
  // that now lies behind a symlink loop (ELOOP), which the scripts make on purpose.
  const git = (...a: string[]) => execFileSync('git', [`--git-dir=${gitDir}`, `--work-tree=${plain}`, '-c', 'user.name=m', '-c', 'user.email=m@m', ...a], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  execFileSync('git', ['init', '-q', '--bare', gitDir]);
  git('add', '-A');
  git('commit', '-q', '-m', 'base');
  const client = Client.create(join(dir, 'store.sqlite'));
  const init = await client.initLayerStack({ name: 'p', source: src });
  client.forkBranch({ name: 'b', layer: init.layer.id });
  const at = join(dir, 'ws');
  try {
    const ws = await client.createWorkspace('b', { at, projection });
    const last = observe(plain);
    const run: Run = { projection, seed, client, wsId: ws.id, plain, at, rnd: prng(seed), clock: 1_700_000_000n * 1_000_000_000n, head: init.layer.id, last, git, gitBase: last.state };
    for (let n = 0; n < scripts; n++) await script(run, n, n === scripts - 1);
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
