// Cell: remotes on PostgreSQL. A throw-away PostgreSQL 15 cluster (test/helpers/postgres.ts,
// fsync on, Unix socket) holds the remote: the run's (--pg-url, started once by the family; the
// cell makes its own databases there and drops them), else one of the cell's own. Untimed setup: import the fixture (initLayerStack),
// fork Branch work, remote add + remote init. Timed, each apart:
//   push        push of the LayerStack to the empty remote              → ms (pushMs)
//   clone       clone of the remote into a new Store (objects re-hashed) → cloneMs
//   push10      after a Workspace commit of 10 edited files, push of Branch work → push10Ms
//   push enc / clone enc: the same push and clone to and from an encrypted remote (another
//               database, `remote init` with a key file) → pushEncMs, cloneEncMs
//   race        8 processes with their own Stores push a commit each to one Branch at once
//               (bench/lib/remote-race.ts): reconciling → raceMs (all must land), strict →
//               raceStrictMs (exactly one wins)
// Bytes: transfer.bytes (stored bytes sent: frames as stored); for push10 also the commit's
// bytesInserted (canonical bytes of its new objects: the changed files' blobs and the pages).
// After timing: the clone's object count equals the source's, and it verifies.
//   node --import tsx bench/cells/remote_push_clone.ts --cell layerfs-remote --dir FIXTURE --tmp SCRATCH --tier 1000 --files 1000

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { TREE_EDIT_OPTIONS, treeEdits } from '../lib/args.js';
import { duBytes, round1, timeExternal } from '../lib/cell.js';
import { applyEdits } from '../fixtures/tree.js';
import pg from 'pg';
import { startCluster } from '../../test/helpers/postgres.js';
import { GIT, gitEnv } from '../lib/git.js';
import { copyTree } from '../fixtures/copy.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';
import { Client } from '../../lib/sdk/index.js';
import { randomBytes } from 'node:crypto';
import { race } from '../lib/remote-race.js';

/** Where the cell's remotes live: databases of a cluster of its own, or of the run's (--pg-url). */
interface Remotes {
  /** A new, empty database: its URL. */
  create(name: string): Promise<string>;
  /** Bytes of the database behind `url`. */
  size(url: string): Promise<number>;
  stop(): Promise<void>;
}

async function admin<T>(url: string, sql: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url.replace(/\/[^/?]+\?/, '/postgres?') });
  await c.connect();
  try {
    return (await c.query(sql)).rows as T[];
  } finally {
    await c.end();
  }
}

/**
 * With `shared` (the URL of the run's cluster, started once by the family), the cell's
 * databases are made there and dropped at the end; else a throw-away cluster of its own.
 */
async function remotes(shared: string | undefined): Promise<Remotes> {
  const own = shared ? undefined : await startCluster({ durable: true });
  const base = shared ?? own!.url;
  const made: string[] = [];
  return {
    async create(name) {
      const db = `lfb_${process.pid}_${name}`;
      await admin(base, `CREATE DATABASE ${db}`);
      made.push(db);
      return base.replace(/\/[^/?]+\?/, `/${db}?`);
    },
    async size(url) {
      const db = new URL(url).pathname.slice(1);
      return Number((await admin<{ n: string }>(base, `SELECT pg_database_size('${db}') AS n`))[0]!.n);
    },
    async stop() {
      if (own) return own.stop();
      for (const db of made) await admin(base, `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
    },
  };
}

/** The same push and clone, encrypted: another database of the cluster, its own key. */
async function sealedPushClone(c: Client, rs: Remotes, tmp: string, objects: number) {
  const sealedUrl = await rs.create('sealed');
  const keyFile = path.join(tmp, 'sealed.key');
  fs.writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
  c.remoteAdd('sealed', sealedUrl);
  await c.remoteInit('sealed', { keyFile });
  let t = performance.now();
  const pushEnc = await c.push('bench', { remote: 'sealed', keyFile });
  const pushEncMs = performance.now() - t;
  t = performance.now();
  const clonedEnc = await Client.clone(sealedUrl, path.join(tmp, 'c.layerfs'), { keyFile });
  const cloneEncMs = performance.now() - t;
  if (clonedEnc.client.info().objects !== objects) throw new Error('the encrypted clone holds another number of objects');
  clonedEnc.client.close();
  return { pushEncMs: round1(pushEncMs), pushEncBytes: pushEnc.transfer.bytes, cloneEncMs: round1(cloneEncMs) };
}

/** The race, on a small LayerStack of its own: reconciling (all 8 land), then strict (one wins). Closes `c`. */
async function raceOnOneBranch(c: Client, url: string, tmp: string) {
  const small = path.join(tmp, 'small');
  fs.mkdirSync(small);
  for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(small, `f${i}.txt`), `file ${i}\n`.repeat(20));
  await c.initLayerStack({ name: 'race', source: small });
  c.forkBranch({ name: 'shared', layer: 'race' });
  c.forkBranch({ name: 'strict', layer: 'race' });
  await c.push('shared');
  await c.push('strict');
  c.close();
  const rec = await race(Client, url, tmp, 'race', 'shared', false);
  if (rec.pushed !== 8 || rec.remoteCommits !== 8) throw new Error(`reconciling race: ${JSON.stringify(rec)}`);
  const strict = await race(Client, url, tmp, 'race', 'strict', true);
  if (strict.pushed !== 1 || strict.headMoved !== 7) throw new Error(`strict race: ${JSON.stringify(strict)}`);
  return { raceMs: round1(rec.ms), raceReconciles: rec.reconciles, raceStrictMs: round1(strict.ms), raceStrictHeadMoved: strict.headMoved };
}

/** `--lite`: push, clone and push10 only (the family's repeated runs, interleaved with git's). */
const REMOTE_OPTIONS = { ...TREE_EDIT_OPTIONS, lite: { type: 'boolean', default: false }, 'pg-url': { type: 'string' } } as const;

async function layerfsRemote(a: Given<typeof REMOTE_OPTIONS, 'dir' | 'tmp' | 'files'>): Promise<CellResult> {
  const tmp = path.resolve(a.tmp);
  const rs = await remotes(a['pg-url']);
  try {
    const url = await rs.create('origin');
    const c = Client.create(path.join(tmp, 'a.layerfs'));
    await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
    c.forkBranch({ name: 'work', layer: 'bench' });
    c.remoteAdd('origin', url);
    await c.remoteInit();

    let t = performance.now();
    const push = await c.push('bench');
    const pushMs = performance.now() - t;

    t = performance.now();
    const cloned = await Client.clone(url, path.join(tmp, 'b.layerfs'));
    const cloneMs = performance.now() - t;
    // What the LayerStack reaches (all sent to the empty remote); the Store may hold more (its
    // current zstd dictionary, kept as a root of the Store but part of no state).
    const objects = push.transfer.objects;
    if (cloned.client.info().objects !== objects) throw new Error(`clone holds ${cloned.client.info().objects} objects, the pushed LayerStack ${objects}`);
    const v = cloned.client.verify();
    if (!v.ok) throw new Error('the clone does not verify');
    cloned.client.close();

    const ws = await c.createWorkspace('work', { at: path.join(tmp, 'ws'), projection: 'materialize' });
    const edits = treeEdits(a);
    applyEdits(ws.path, edits);
    const changedBytes = edits.reduce((s, e) => s + fs.statSync(path.join(ws.path, e.relPath)).size, 0);
    const commit = await c.commitWorkspace(ws.id);
    if (commit.outcome !== 'Created') throw new Error(`commit: ${commit.outcome}`);
    await c.endWorkspace(ws.id);
    t = performance.now();
    const push10 = await c.push('work');
    const push10Ms = performance.now() - t;
    const sealed = a.lite ? {} : await sealedPushClone(c, rs, tmp, objects);
    const races = a.lite ? {} : await raceOnOneBranch(c, url, tmp);
    if (a.lite) c.close();
    return {
      ms: round1(pushMs),
      pushMs: round1(pushMs),
      cloneMs: round1(cloneMs),
      push10Ms: round1(push10Ms),
      files: Number(a.files),
      objects,
      pushBytes: push.transfer.bytes,
      pushObjects: push.transfer.objects,
      pushQueries: push.transfer.queries,
      cloneBytes: cloned.result.transfer.bytes,
      push10Bytes: push10.transfer.bytes,
      ...sealed,
      ...races,
      push10Objects: push10.transfer.objects,
      push10Asked: push10.transfer.asked,
      changedBytes,
      commitBytesInserted: commit.bytesInserted,
      remoteBytes: await rs.size(url),
    };
  } finally {
    await rs.stop();
  }
}

// Cell: the git peer of layerfs-remote. Untimed setup: copy the fixture, `git init && git add -A
// && git commit`, `git init --bare` of an empty remote on the same disk. Timed, each apart:
//   push        git push of the commit to the empty bare repository    → ms (pushMs)
//   clone       git clone --no-local of it (with checkout, as specified) → cloneMs;
//               and --no-checkout (objects only, like a Store clone)     → cloneBareMs
//   push10      after the same 10 edits and `git commit -a`, git push    → push10Ms
// Bytes: growth of the bare repository (du -sb), what the push wrote there.
//   node --import tsx bench/cells/remote_push_clone.ts --cell git-remote --dir FIXTURE --tmp SCRATCH --tier 1000 --files 1000
async function gitRemote(a: Given<typeof REMOTE_OPTIONS, 'dir' | 'tmp' | 'files'>): Promise<CellResult> {
  const tmp = path.resolve(a.tmp);
  const work = path.join(tmp, 'wt');
  const gitDir = path.join(tmp, 'repo.git');
  const bare = path.join(tmp, 'remote.git');
  copyTree(path.resolve(a.dir), work);
  const env = gitEnv(gitDir, work);
  timeExternal(['sh', '-c', `${GIT} init -q -b main && ${GIT} add -A && ${GIT} commit -q -m init`], { env, cwd: work });
  const plain = { ...env };
  delete plain.GIT_DIR;
  delete plain.GIT_WORK_TREE;
  timeExternal(['git', 'init', '-q', '--bare', bare], { env: plain, cwd: tmp });
  const before = duBytes(bare);
  const push = timeExternal(['sh', '-c', `${GIT} push -q ${bare} main`], { env, cwd: work });
  const pushBytes = duBytes(bare) - before;
  const clone = timeExternal(['sh', '-c', `${GIT} clone -q --no-local ${bare} ${path.join(tmp, 'c1')}`], { env: plain, cwd: tmp });
  const cloneBare = timeExternal(['sh', '-c', `${GIT} clone -q --no-local --no-checkout ${bare} ${path.join(tmp, 'c2')}`], { env: plain, cwd: tmp });
  const edits = treeEdits(a);
  applyEdits(work, edits);
  const changedBytes = edits.reduce((s, e) => s + fs.statSync(path.join(work, e.relPath)).size, 0);
  timeExternal(['sh', '-c', `${GIT} commit -a -q -m x`], { env, cwd: work });
  const mid = duBytes(bare);
  const push10 = timeExternal(['sh', '-c', `${GIT} push -q ${bare} main`], { env, cwd: work });
  return {
    ms: round1(push.ms),
    pushMs: round1(push.ms),
    cloneMs: round1(clone.ms),
    cloneBareMs: round1(cloneBare.ms),
    push10Ms: round1(push10.ms),
    maxRssMiB: round1(Math.max(push.maxRssMiB, clone.maxRssMiB)),
    files: Number(a.files),
    pushBytes,
    push10Bytes: duBytes(bare) - mid,
    changedBytes,
    remoteBytes: duBytes(bare),
  };
}

export const remotePushClone = defineCell({
  file: import.meta.url,
  id: 'layerfs-remote',
  tool: 'layerfs',
  args: REMOTE_OPTIONS,
  required: ['dir', 'tmp', 'files'],
  run: layerfsRemote,
  peers: [{ id: 'git-remote', tool: 'git', run: gitRemote }],
});

runIfMain(import.meta.url, remotePushClone);
