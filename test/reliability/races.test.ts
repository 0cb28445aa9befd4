/**
 * Races on one Store between processes released together from a barrier: concurrent Add on
 * one LayerStack (each round exactly one Added, every other HeadMoved, the history exact) and
 * concurrent `db create` on one path (exactly one Created, the others ERR_EXISTS, the Store valid).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const worker = fileURLToPath(new URL('./race-worker.ts', import.meta.url));
const ADDERS = Number(process.env.LAYERFS_RACE_ADDERS ?? 6);
const ROUNDS = Number(process.env.LAYERFS_RACE_ROUNDS ?? 5);
const CREATORS = 8;

interface Worker {
  child: ChildProcessWithoutNullStreams;
  /** The next JSON line the worker prints. */
  next(): Promise<any>;
  send(line: string): void;
}

function start(args: string[]): Worker {
  const child = spawn(process.execPath, nodeArgs(worker, ...args), { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    child,
    async next() {
      const r = await lines.next();
      if (r.done) throw new Error(`worker ${args.join(' ')} ended early: ${stderr}`);
      return JSON.parse(r.value);
    },
    send(line: string) {
      child.stdin.write(line + '\n');
    },
  };
}

async function stopAll(ws: Worker[]): Promise<void> {
  await Promise.all(
    ws.map(
      (w) =>
        new Promise<void>((resolve) => {
          if (w.child.exitCode !== null) return resolve();
          w.child.on('exit', () => resolve());
          w.child.stdin.end('exit\n');
        }),
    ),
  );
}

test(`concurrent Add: ${ADDERS} processes × ${ROUNDS} rounds, each round exactly one Added`, { timeout: 300_000 }, async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let i = 0; i < 5; i++) writeFileSync(join(src, `f${i}`), `file ${i}\n`);
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  const first = (await c.initLayerStack({ name: 'p', source: src })).layer.id;
  c.close();
  const wsRoot = join(dir, 'ws');
  mkdirSync(wsRoot);
  const workers = Array.from({ length: ADDERS }, (_, i) => start(['add', store, String(i), wsRoot]));
  const winners: { branch: string; layer: string; worker: string }[] = [];
  try {
    await Promise.all(workers.map((w) => w.next()));
    for (let round = 0; round < ROUNDS; round++) {
      for (const w of workers) w.send(`prepare ${round}`);
      const ready = await Promise.all(workers.map((w) => w.next()));
      assert.deepEqual(
        ready.filter((r) => r.error),
        [],
      );
      // The barrier: everyone is prepared against the same head; release them together.
      for (const w of workers) w.send(`go ${round}`);
      const results = await Promise.all(workers.map((w) => w.next()));
      assert.deepEqual(
        results.filter((r) => r.error),
        [],
        `round ${round}: no error may escape`,
      );
      const added = results.filter((r) => r.outcome === 'Added');
      assert.equal(added.length, 1, `round ${round}: ${JSON.stringify(results.map((r) => r.outcome))}`);
      assert.equal(results.filter((r) => r.outcome === 'HeadMoved').length, ADDERS - 1, `round ${round}`);
      winners.push({ branch: added[0].branch, layer: added[0].layer, worker: added[0].worker });
    }
  } finally {
    await stopAll(workers);
  }
  // The history is exactly the winners, in order, each on top of the previous.
  const c2 = Client.connect(store);
  try {
    const layers = c2.layers({ layerStack: 'p' }).sort((a, b) => a.seq - b.seq);
    assert.deepEqual(
      layers.map((l) => l.id),
      [first, ...winners.map((w) => w.layer)],
    );
    for (let i = 1; i < layers.length; i++) {
      assert.equal(layers[i]!.parentLayerId, layers[i - 1]!.id);
      assert.equal(layers[i]!.sourceBranchId, winners[i - 1]!.branch);
    }
    assert.equal(c2.layerStacks()[0]!.headLayerId, winners[winners.length - 1]!.layer);
    // The last Layer holds every winner's file, each from the last round that worker won.
    const last = new Map<string, string>();
    winners.forEach((w, round) => last.set(w.worker, `worker ${w.worker} round ${round}\n`));
    const head = winners[winners.length - 1]!.layer;
    for (const [worker, text] of last) assert.equal(c2.cat(head, `w${worker}.txt`).toString(), text);
    assert.equal(c2.ls(head).length, 5 + last.size);
    assertIntact(c2);
  } finally {
    c2.close();
  }
});

test(`concurrent db create: ${CREATORS} processes on one path, exactly one Created`, { timeout: 300_000 }, async () => {
  const dir = tempDir();
  const store = join(dir, 's.sqlite');
  const workers = Array.from({ length: CREATORS }, (_, i) => start(['create', store, String(i), dir]));
  let results: any[];
  try {
    await Promise.all(workers.map((w) => w.next()));
    for (const w of workers) w.send('go 0');
    results = await Promise.all(workers.map((w) => w.next()));
  } finally {
    await stopAll(workers);
  }
  assert.deepEqual(
    results.filter((r) => r.error),
    [],
  );
  const created = results.filter((r) => r.cli.outcome === 'Created');
  const refused = results.filter((r) => r.cli.error);
  assert.equal(created.length, 1, JSON.stringify(results));
  assert.equal(refused.length, CREATORS - 1);
  for (const r of refused) {
    assert.equal(r.cli.error.code, 'ERR_EXISTS');
    assert.equal(r.cli.error.path, store);
    assert.equal(r.exitCode, 1);
  }
  assert.equal(created[0].exitCode, 0);
  // One valid Store, with the id the winner reported, and no temporary files left behind.
  const c = Client.connect(store);
  try {
    assert.equal(c.info().storeId, created[0].cli.store.storeId);
    assertIntact(c);
  } finally {
    c.close();
  }
  assert.deepEqual(
    readdirSync(dir).filter((n) => n.includes('.creating-')),
    [],
  );
});
