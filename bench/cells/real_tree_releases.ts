// Cell: the real-tree fixture's two releases through layerfs, each whole operation timed apart:
//   import      Client.create + initLayerStack(release A)                         → importMs
//   create      createWorkspace(projection) of A                                  → createMs
//   rsync       rsync -a --delete B/ ws/ (the change arrives as a user's tool makes it) → rsyncMs
//   commit      commitWorkspace: B over A                                         → commitMs
//   written     Store file + WAL after both releases, as written                  → storeBytes
//   export      export the committed state into a new directory (materialize only) → exportMs
//   end         endWorkspace                                                      → endMs
//   import B    a fresh Store importing release B alone (materialize only)        → importBMs
//   repack      db repack of the two-release Store (materialize only)             → repackMs, repackedBytes
//   read        readFile of release B's largest file, streamed (materialize only)  → readMs, readBytes
// --skip-storage leaves out the fresh-Store storage figures (repack here, gc in the git peer).
// After timing, the committed state is compared with release B (file count and bytes via ls).
//   node bench/cells/real_tree_releases.ts --cell layerfs-real-tree --a DIR --b DIR --tmp SCRATCH --tier LABEL [--projection fuse]

import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { Client } from '../../lib/sdk/index.js';
import { duBytes, round1, timeExternal } from '../lib/cell.js';
import { GIT as git, gitEnv } from '../lib/git.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';

const REAL_TREE_OPTIONS = {
  a: { type: 'string' },
  b: { type: 'string' },
  projection: { type: 'string', default: 'materialize' },
  'skip-storage': { type: 'boolean' },
} as const;

/** The largest regular file under `root` (relative path and size): the streaming-read case. */
function largestFile(root: string): { rel: string; size: number } {
  let best = { rel: '', size: -1 };
  const stack = [''];
  while (stack.length > 0) {
    const rel = stack.pop()!;
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) stack.push(r);
      else if (e.isFile()) {
        const size = fs.statSync(path.join(root, r)).size;
        if (size > best.size) best = { rel: r, size };
      }
    }
  }
  return best;
}

function fileBytes(p: string): number {
  let n = 0;
  for (const f of [p, `${p}-wal`]) if (fs.existsSync(f)) n += fs.statSync(f).size;
  return n;
}

/** The mount daemon's peak RSS so far (VmHWM), in MiB. */
async function daemonPeakRss(c: Client): Promise<number | undefined> {
  const st = await c.daemonStatus();
  if (!st) return undefined;
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${st.pid}/status`, 'utf8'));
  return m ? round1(Number(m[1]) / 1024) : undefined;
}

async function timed<T>(fn: () => Promise<T> | T): Promise<[T, number]> {
  const t = performance.now();
  const v = await fn();
  return [v, round1(performance.now() - t)];
}

async function layerfsRealTree(a: Given<typeof REAL_TREE_OPTIONS, never>): Promise<CellResult> {
  if (!a.a || !a.b || !a.tmp) throw new Error('--a, --b and --tmp are required');
  const projection = a.projection as 'materialize' | 'fuse';
  const tmp = path.resolve(a.tmp);
  const store = path.join(tmp, 'two.sqlite');
  const ws = path.join(tmp, 'ws');
  const out: Record<string, unknown> = { projection };
  let c = Client.create(store);
  const [init, importMs] = await timed(() => c.initLayerStack({ name: 'real', source: path.resolve(a.a!) }));
  out.importMs = importMs;
  out.files = init.files;
  c.forkBranch({ name: 'next', layer: init.layer.id });
  const [w, createMs] = await timed(() => c.createWorkspace('next', { at: ws, projection }));
  out.createMs = createMs;
  const rsync = timeExternal(['rsync', '-a', '--delete', `${path.resolve(a.b!)}/`, `${ws}/`]);
  out.rsyncMs = round1(rsync.ms);
  const [commit, commitMs] = await timed(() => c.commitWorkspace(w.id, { message: 'release B' }));
  if (commit.outcome !== 'Created') throw new Error(`commit of B over A: ${commit.outcome}`);
  out.commitMs = commitMs;
  out.commitRssMiB = round1(process.resourceUsage().maxRSS / 1024);
  out.objectsInserted = commit.objectsInserted;
  out.bytesInserted = commit.bytesInserted;
  out.changedPaths = commit.changedPaths;
  if (projection === 'fuse') out.daemonPeakRssMiB = await daemonPeakRss(c);
  if (projection === 'materialize') {
    const [, exportMs] = await timed(() => c.export('next', path.join(tmp, 'export')));
    out.exportMs = exportMs;
    const big = largestFile(path.resolve(a.b!));
    let n = 0;
    const [, readMs] = await timed(() => {
      for (const piece of c.readFile('next', big.rel)) n += piece.length;
    });
    if (n !== big.size) throw new Error(`read ${n} of ${big.size} bytes of ${big.rel}`);
    Object.assign(out, { readMs, readBytes: n, readPath: big.rel });
  }
  const [, endMs] = await timed(() => c.endWorkspace(w.id));
  out.endMs = endMs;
  if (projection === 'fuse') await c.stopDaemon({ discard: true });
  c.close();
  out.storeBytes = fileBytes(store);
  if (projection === 'materialize') {
    fs.rmSync(path.join(tmp, 'export'), { recursive: true, force: true });
    out.importBRssMiB = round1(process.resourceUsage().maxRSS / 1024);
    const fresh = path.join(tmp, 'b.sqlite');
    const cb = Client.create(fresh);
    const [, importBMs] = await timed(() => cb.initLayerStack({ name: 'b', source: path.resolve(a.b!) }));
    out.importBMs = importBMs;
    cb.close();
    fs.rmSync(fresh, { force: true });
    if (!a['skip-storage']) {
      c = Client.connect(store);
      const [, repackMs] = await timed(() => c.repack());
      out.repackMs = repackMs;
      c.close();
      out.repackedBytes = fileBytes(store);
    }
  }
  const du = spawnSync('du', ['-sb', path.resolve(a.b!)], { encoding: 'utf8' });
  out.bytes = Number(du.stdout.split('\t')[0]);
  return { ms: out.commitMs as number, storeBytes: out.storeBytes as number, ...out };
}

// Cell: the git (and cp, rm, tar) peers of layerfs-real-tree on the same two releases:
//   cp          cp -a A work/ (the peer of materialize and export)               → cpMs
//   tar         tar c A > /dev/null (reading the tree once)                       → tarMs
//   import      git init && git add -A && git commit (release A)                  → importMs
//   rsync       rsync -a --delete B/ work/                                        → rsyncMs
//   commit      git add -A && git commit (B over A)                               → commitMs
//   loose       du -sb .git after both, as written                                → looseBytes
//   read        git cat-file blob of release B's largest file                     → readMs, readBytes
//   gc          git gc                                                            → gcMs, gcBytes
//   aggressive  git gc --aggressive                                               → aggressiveMs, aggressiveBytes
//   rm          rm -rf work/                                                      → rmMs
// Global/system config is ignored and automatic gc is off, as in the other git cells.
//   node bench/cells/real_tree_releases.ts --cell git-real-tree --a DIR --b DIR --tmp SCRATCH --tier LABEL
async function gitRealTree(a: Given<typeof REAL_TREE_OPTIONS, never>): Promise<CellResult> {
  if (!a.a || !a.b || !a.tmp) throw new Error('--a, --b and --tmp are required');
  const tmp = path.resolve(a.tmp);
  const work = path.join(tmp, 'work');
  const gitDir = path.join(tmp, 'repo.git');
  const A = path.resolve(a.a);
  const B = path.resolve(a.b);
  const cp = timeExternal(['cp', '-a', A, work]);
  const tar = timeExternal(['sh', '-c', `tar cf - -C ${JSON.stringify(A)} . > /dev/null`]);
  const env = gitEnv(gitDir, work);
  const imp = timeExternal(['sh', '-c', `${git} init -q && ${git} add -A && ${git} commit -q -m A`], { env, cwd: work });
  const rsync = timeExternal(['rsync', '-a', '--delete', '--exclude=/.git', `${B}/`, `${work}/`]);
  const commit = timeExternal(['sh', '-c', `${git} add -A && ${git} commit -q -m B`], { env, cwd: work });
  const looseBytes = duBytes(gitDir);
  const big = largestFile(B);
  const read = timeExternal(['sh', '-c', `${git} cat-file blob HEAD:${JSON.stringify(big.rel)} | cat > /dev/null`], { env, cwd: work });
  const storage = a['skip-storage'] ? null : gitStorage(env, work, gitDir);
  const rm = timeExternal(['rm', '-rf', work]);
  return {
    readMs: round1(read.ms),
    readBytes: big.size,
    ms: round1(commit.ms),
    maxRssMiB: round1(Math.max(imp.maxRssMiB, commit.maxRssMiB)),
    cpMs: round1(cp.ms),
    tarMs: round1(tar.ms),
    importMs: round1(imp.ms),
    rsyncMs: round1(rsync.ms),
    commitMs: round1(commit.ms),
    storeBytes: storage?.gcBytes ?? looseBytes,
    looseBytes,
    ...storage,
    rmMs: round1(rm.ms),
    bytes: duBytes(B),
  };
}

/** `git gc` and `git gc --aggressive` of the two-release repository: time and size after each. */
function gitStorage(env: NodeJS.ProcessEnv, work: string, gitDir: string): Record<string, number> {
  const gc = timeExternal(['sh', '-c', `${git} gc -q`], { env, cwd: work });
  const gcBytes = duBytes(gitDir);
  const aggressive = timeExternal(['sh', '-c', `${git} gc -q --aggressive`], { env, cwd: work });
  return { gcMs: round1(gc.ms), gcBytes, aggressiveMs: round1(aggressive.ms), aggressiveBytes: duBytes(gitDir) };
}

export const realTree = defineCell({
  file: import.meta.url,
  id: 'layerfs-real-tree',
  tool: 'layerfs',
  args: REAL_TREE_OPTIONS,
  run: layerfsRealTree,
  peers: [{ id: 'git-real-tree', tool: 'git', run: gitRealTree }],
});

runIfMain(import.meta.url, realTree);
