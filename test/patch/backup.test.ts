// db backup: a consistent online copy while four processes commit; it verifies and holds every
// state published before the backup started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { cli } from '../helpers/cli.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const committer = fileURLToPath(new URL('./fixtures/committer.ts', import.meta.url));

test('backup while 4 processes commit: verified, and holds every state published before it started', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let i = 0; i < 200; i++) writeFileSync(join(src, `seed${i}.txt`), `seed ${i}\n`.repeat(50));
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  const init = await c.initLayerStack({ name: 'p', source: src });
  const wss: string[] = [];
  for (let k = 0; k < 4; k++) {
    c.forkBranch({ name: `b${k}`, layer: init.layer.id });
    wss.push((await c.createWorkspace(`b${k}`, { at: join(dir, `ws${k}`), projection: 'materialize' })).id);
  }
  const stop = join(dir, 'stop');
  const published: string[][] = [[], [], [], []];
  const procs = wss.map((ws, k) => {
    const p = spawn(process.execPath, nodeArgs(committer, store, ws, stop), { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    p.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      published[k]!.push(...lines);
    });
    return new Promise<number>((resolve) => p.on('exit', (code) => resolve(code ?? -1)));
  });
  while (published.some((p) => p.length < 3)) await new Promise((r) => setTimeout(r, 50));
  // Every Commit printed so far was published before the backup starts.
  const before = published.flat();
  const backups: string[] = [];
  for (let round = 0; round < 2; round++) {
    const dest = join(dir, `backup${round}.sqlite`);
    const r = await c.backup(dest);
    assert.equal(r.outcome, 'BackedUp');
    backups.push(dest);
  }
  const during = published.flat().length;
  writeFileSync(stop, '');
  assert.deepEqual(await Promise.all(procs), [0, 0, 0, 0]);
  assert.ok(during > before.length, 'the writers kept committing during the backups');
  for (const b of backups) {
    assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith(b.split('/').pop()!) && n !== b.split('/').pop()), [], 'no temporary or -wal files left');
    assertStoreIntact(b);
    const copy = Client.connect(b, { readonly: true });
    const ids = new Set(copy.commits().map((x) => x.id));
    for (const id of before) assert.ok(ids.has(id), `Commit ${id} published before the backup is in it`);
    for (const id of before.slice(-4)) assert.deepEqual(copy.ls(id).map((e) => e.name).sort(), c.ls(id).map((e) => e.name).sort());
    copy.close();
  }
  await assert.rejects(c.backup(backups[0]!), (e: unknown) => isLayerFsError(e) && e.code === 'ERR_EXISTS');
  assertIntact(c);
  c.close();
  const viaCli = cli(['--store', store, 'db', 'backup', join(dir, 'cli.sqlite')]);
  assert.equal(viaCli.code, 0, viaCli.stderr);
  assert.match(viaCli.stdout, /backed up .* verified \d+ states/);
  assert.ok(existsSync(join(dir, 'cli.sqlite')));
});
