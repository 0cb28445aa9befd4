/**
 * 8 processes with separate Stores push disjoint changes to one remote Branch at once (a real
 * PostgreSQL cluster). By default a stale push reconciles: all 8 land in one race, nothing is
 * lost. With --strict, in each race exactly one wins and every other gets ERR_HEAD_MOVED, nothing
 * is overwritten; the losers start again from the remote state (a fresh clone) until all 8 landed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { startCluster, type PgCluster } from '../helpers/postgres.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { writeTree } from './fixture.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const worker = fileURLToPath(new URL('./push-worker.ts', import.meta.url));
let pg: PgCluster;
before(async () => {
  pg = await startCluster();
});
after(() => pg?.stop());

interface Racer {
  ready: Promise<void>;
  done: Promise<{ outcome?: string; error?: string; attempts?: number }>;
}

function race(store: string, at: string, file: string, go: string, mode: 'strict' | 'reconcile'): Racer {
  const child = spawn(process.execPath, nodeArgs(worker, store, at, file, go, mode), { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let readyResolve!: () => void;
  const ready = new Promise<void>((r) => (readyResolve = r));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('ready\n')) readyResolve();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<{ outcome?: string; error?: string }>((resolve, reject) =>
    child.on('exit', (code) => {
      const line = out.split('\n').filter((l) => l.startsWith('{')).pop();
      if (code !== 0 || !line) reject(new Error(`worker ${file} exited ${code}: ${err}`));
      else resolve(JSON.parse(line));
    }),
  );
  return { ready, done };
}

/** A remote (database `db`) holding LayerStack demo and Branch shared. */
async function seedRemote(dir: string, db: string): Promise<string> {
  pg.psql(`CREATE DATABASE ${db}`);
  const url = pg.url.replace('/postgres?', `/${db}?`);
  writeTree(dir, 20);
  const seed = Client.create(join(dir, 'seed.sqlite'));
  await seed.initLayerStack({ name: 'demo', source: join(dir, 'src') });
  seed.forkBranch({ name: 'shared', layer: 'demo' });
  seed.remoteAdd('origin', url);
  await seed.remoteInit();
  await seed.push('shared');
  seed.close();
  return url;
}

/** The remote Branch holds 8 Commits and every racer's file; the remote verifies. */
async function checkLanded(dir: string, url: string): Promise<void> {
  const { client: check } = await Client.clone(url, join(dir, 'check.sqlite'));
  const log = check.log('shared');
  assert.equal(log.length, 8);
  const names = check.ls('shared').map((e) => e.name);
  for (let i = 0; i < 8; i++) assert.ok(names.includes(`w${i}.txt`), `w${i}.txt landed`);
  assertIntact(check);
  const rv = await check.remoteVerify();
  assert.equal(rv.ok, true, JSON.stringify(rv.damage));
  check.close();
}

test('8 Stores push disjoint changes to one remote Branch at once: all land, reconciled, nothing lost', async () => {
  const dir = tempDir();
  const url = await seedRemote(dir, 'reconciling');
  const go = join(dir, 'go');
  const racers: Racer[] = [];
  for (let i = 0; i < 8; i++) {
    const store = join(dir, `s${i}.sqlite`);
    (await Client.clone(url, store)).client.close();
    racers.push(race(store, join(dir, `ws${i}`), `w${i}.txt`, go, 'reconcile'));
  }
  await Promise.all(racers.map((r) => r.ready));
  writeFileSync(go, '');
  const results = await Promise.all(racers.map((r) => r.done));
  assert.deepEqual(
    results.map((r) => r.outcome),
    Array(8).fill('Pushed'),
    JSON.stringify(results),
  );
  // They raced: whoever was not first lost a compare-and-swap and reconciled.
  assert.ok(results.filter((r) => (r.attempts ?? 0) > 0).length >= 1, JSON.stringify(results));
  await checkLanded(dir, url);
});

test('--strict: 8 Stores push to one remote Branch at once: exactly one wins each race, the others get HeadMoved; all land in the end', async () => {
  const dir = tempDir();
  const url = await seedRemote(dir, 'racing');
  let waiting = Array.from({ length: 8 }, (_, i) => i);
  const winners: number[] = [];
  for (let round = 0; waiting.length > 0; round++) {
    const go = join(dir, `go-${round}`);
    const racers = waiting.map((i) => {
      const store = join(dir, `s${i}-${round}.sqlite`);
      return { i, store, racer: undefined as Racer | undefined };
    });
    for (const r of racers) (await Client.clone(url, r.store)).client.close();
    for (const r of racers) r.racer = race(r.store, join(dir, `ws${r.i}-${round}`), `w${r.i}.txt`, go, 'strict');
    await Promise.all(racers.map((r) => r.racer!.ready));
    writeFileSync(go, '');
    const results = await Promise.all(racers.map(async (r) => ({ i: r.i, res: await r.racer!.done })));
    const won = results.filter((r) => r.res.outcome === 'Pushed');
    const lost = results.filter((r) => r.res.error === 'ERR_HEAD_MOVED');
    assert.equal(won.length, 1, `round ${round}: ${JSON.stringify(results)}`);
    assert.equal(lost.length, results.length - 1, `round ${round}: ${JSON.stringify(results)}`);
    winners.push(won[0]!.i);
    waiting = waiting.filter((i) => i !== won[0]!.i);
  }
  assert.equal(winners.length, 8);
  await checkLanded(dir, url);
});
