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
// After timing, the committed state is compared with release B (file count and bytes via ls).
//   node bench/cells/layerfs-real-tree.ts --a DIR --b DIR --tmp SCRATCH --tier LABEL [--projection fuse]

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Client } from '../../lib/sdk/index.js';
import { emit, fail, round1, timeExternal } from '../lib/cell.js';

const CELL = 'layerfs-real-tree';
const { values: a } = parseArgs({ options: { a: { type: 'string' }, b: { type: 'string' }, tmp: { type: 'string' }, tier: { type: 'string', default: '?' }, projection: { type: 'string', default: 'materialize' } } });
const tier = a.tier!;

function fileBytes(p: string): number {
  let n = 0;
  for (const f of [p, `${p}-wal`]) if (fs.existsSync(f)) n += fs.statSync(f).size;
  return n;
}

async function timed<T>(fn: () => Promise<T> | T): Promise<[T, number]> {
  const t = performance.now();
  const v = await fn();
  return [v, round1(performance.now() - t)];
}

try {
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
  if (projection === 'materialize') {
    const [, exportMs] = await timed(() => c.export('next', path.join(tmp, 'export')));
    out.exportMs = exportMs;
  }
  const [, endMs] = await timed(() => c.endWorkspace(w.id));
  out.endMs = endMs;
  if (projection === 'fuse') await c.stopDaemon({ discard: true });
  c.close();
  out.storeBytes = fileBytes(store);
  if (projection === 'materialize') {
    fs.rmSync(path.join(tmp, 'export'), { recursive: true, force: true });
    const fresh = path.join(tmp, 'b.sqlite');
    const cb = Client.create(fresh);
    const [, importBMs] = await timed(() => cb.initLayerStack({ name: 'b', source: path.resolve(a.b!) }));
    out.importBMs = importBMs;
    cb.close();
    fs.rmSync(fresh, { force: true });
    c = Client.connect(store);
    const [, repackMs] = await timed(() => c.repack());
    out.repackMs = repackMs;
    c.close();
    out.repackedBytes = fileBytes(store);
  }
  const du = spawnSync('du', ['-sb', path.resolve(a.b!)], { encoding: 'utf8' });
  out.bytes = Number(du.stdout.split('\t')[0]);
  emit({ cell: CELL, tier, ms: out.commitMs as number, storeBytes: out.storeBytes as number, ...out });
} catch (err) {
  fail(CELL, tier, err);
}
