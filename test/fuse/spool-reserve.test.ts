// Spool files made ahead by the daemon's thread (lib/fuse/spool-reserve.ts): a spool whose file
// was made only opens it; one that comes first creates it, and the maker then takes it as made
// without touching its bytes; a maker that is stopped makes nothing more; a spool directory gone
// counts nothing made and spools fail as before. Seeded: which spools are written before the maker
// catches up, and what they hold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises';
import { spoolFactory, type Spool } from '../../lib/fuse/spool.js';
import { SpoolMaker, spoolReserve } from '../../lib/fuse/spool-reserve.js';
import { rng } from '../helpers/random.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

/** Waits (up to 60 s: the files are made on the thread pool, slow on a loaded machine) until `cond`. */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!cond() && Date.now() < deadline) await sleep(2);
  assert.ok(cond(), what);
}

test('spools made ahead and spools that come first hold exactly what was written; the maker stops when told', async () => {
  const seed = Number(process.env.SEED ?? 1 + Math.floor(Math.random() * 1e6));
  console.log(`seed ${seed}`);
  const r = rng(seed);
  const dir = join(tempDir(), 'spool');
  mkdirSync(dir, { mode: 0o700 });
  const maker = new SpoolMaker();
  const reserve = spoolReserve((req) => maker.make(req));
  const newSpool = spoolFactory(dir, reserve);
  const spools: { spool: Spool; bytes: Buffer }[] = [];
  const add = () => {
    const spool = newSpool();
    const bytes = seededBytes(seed + spools.length, 1 + Math.floor(r() * 9000));
    spool.write(bytes, 0);
    spools.push({ spool, bytes });
  };
  // The first spools come before the maker has made anything (their files are created here).
  const first = 1 + Math.floor(r() * 40);
  for (let i = 0; i < first; i++) add();
  await until(() => reserve.made() >= 256, `the maker made the first batch (seed ${seed})`);
  // Then spools whose files were made ahead, and some while it makes the next batch.
  const more = 300 + Math.floor(r() * 200);
  for (let i = 0; i < more; i++) {
    add();
    if (r() < 0.05) await tick();
  }
  for (const { spool, bytes } of spools) {
    const back = Buffer.alloc(bytes.length + 10, 0xff);
    spool.read(back, 0, back.length, 0);
    assert.deepEqual(back.subarray(0, bytes.length), bytes, `seed ${seed}: ${spool.path}`);
    assert.ok(back.subarray(bytes.length).every((b) => b === 0), `seed ${seed}: zeros past what was written`);
  }
  await maker.stop();
  const made = readdirSync(dir).length;
  await tick();
  await tick();
  assert.equal(readdirSync(dir).length, made, 'nothing is made after stop');
  assert.ok(made >= spools.length && reserve.made() <= made, `${made} files, ${spools.length} spools, ${reserve.made()} counted made`);
  for (const { spool } of spools) spool.close();
});

test('a spool directory that is gone: nothing is counted made there, and a new spool fails as it did without a reserve', async () => {
  const dir = join(tempDir(), 'spool');
  mkdirSync(dir, { mode: 0o700 });
  const maker = new SpoolMaker();
  const reserve = spoolReserve((req) => maker.make(req));
  const newSpool = spoolFactory(dir, reserve);
  newSpool().close();
  rmSync(dir, { recursive: true, force: true });
  await maker.stop();
  assert.ok(reserve.made() < 256, 'no file counted made in a missing directory');
  assert.throws(() => newSpool(), (e: NodeJS.ErrnoException) => e.code === 'ENOENT');
});
