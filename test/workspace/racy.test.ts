// Racy stat cache entries (lib/workspace/racy.ts): a commit reads changed files at once and marks
// those read within their ctime's tick; status confirms them by content, the next commit re-reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { Store, writableAsIs } from '../../lib/store/index.js';
import { FORMAT_VERSION } from '../../lib/store/schema.js';
import { cli } from '../helpers/cli.js';
import { walkRelPath, WalkKind } from '../../lib/native/walk.js';
import { loadCache, saveCache, type StatCache } from '../../lib/workspace/cache.js';
import { SMUDGED_SIZE, smudgeRacy } from '../../lib/workspace/racy.js';
import { COARSE_TICK_MS, RACY_TICK_MS, racyWaitMs } from '../../lib/workspace/record.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';
import { Rng } from '../helpers/random.js';

const FILES = 6;
const SEED = Number(process.env.LAYERFS_RACY_SEED ?? Date.now() % 0x7fffffff);

async function setup() {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  for (let f = 0; f < FILES; f++) writeFileSync(join(src, `d/f${f}.txt`), `initial ${f}`);
  const storePath = join(dir, 'store.sqlite');
  const client = Client.create(storePath);
  const init = await client.initLayerStack({ name: 'p', source: src });
  client.forkBranch({ name: 'b', layer: init.layer.id });
  const at = join(dir, 'ws');
  const ws = await client.createWorkspace('b', { at });
  const store = Store.open(storePath);
  const id = Buffer.from(ws.id, 'hex');
  return { dir, storePath, client, at, ws, store, id, cache: (): StatCache => loadCache(store, id) };
}

const smudged = (c: StatCache): number => c.size.filter((v) => v === SMUDGED_SIZE).length;

/** Commits edits of d/f1.txt until a commit reads it within its tick (the cache then has a racy entry). */
async function commitUntilRacy(client: Client, at: string, ws: string, cache: () => StatCache): Promise<void> {
  let seen = false;
  for (let attempt = 0; attempt < 100 && !seen; attempt++) {
    writeFileSync(join(at, 'd/f1.txt'), `version ${attempt}`);
    assert.equal((await client.commitWorkspace(ws)).outcome, 'Created');
    seen = smudged(cache()) > 0;
  }
  assert.ok(seen, 'no commit read a file within its tick');
}

function bytes(r: Rng, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = 0x61 + r.below(26);
  return b;
}

test(`a same-size write right after a commit is listed and stored (seed ${SEED})`, async () => {
  console.log(`racy seed ${SEED} (LAYERFS_RACY_SEED=${SEED})`);
  const r = new Rng(SEED);
  const { client, at, ws, store, cache } = await setup();
  let racy = 0;
  try {
    // 60 rounds; on a machine slow enough that none of them read within the tick, more (bounded).
    for (let round = 0; round < 60 || (racy === 0 && round < 300); round++) {
      const f = `d/f${r.below(FILES)}.txt`;
      const n = 1 + r.below(200);
      const first = bytes(r, n);
      let second = bytes(r, n);
      if (second.equals(first)) second = Buffer.from(first.map((c) => (c === 0x61 ? 0x62 : 0x61)));
      writeFileSync(join(at, f), first);
      const c1 = await client.commitWorkspace(ws.id);
      assert.equal(c1.outcome, 'Created', `seed ${SEED} round ${round}`);
      // Racy entries of the commit before, read again unchanged, are not changed paths.
      assert.equal(c1.changedPaths, 1, `seed ${SEED} round ${round}`);
      // Status right after a commit lists nothing, racy entries or not.
      assert.deepEqual((await client.workspaceStatus(ws.id)).changes, [], `seed ${SEED} round ${round}: status after a commit`);
      if (smudged(cache()) > 0) racy++;
      // Same size at once: within the tick the commit read, size/mtime/ctime may all be as cached.
      writeFileSync(join(at, f), second);
      const st = await client.workspaceStatus(ws.id);
      assert.deepEqual(st.changes.map((c) => [c.change, c.path]), [['modified', f]], `seed ${SEED} round ${round}: the second write`);
      const c2 = await client.commitWorkspace(ws.id);
      assert.equal(c2.outcome, 'Created', `seed ${SEED} round ${round}: the second write was missed`);
      assert.equal(c2.changedPaths, 1, `seed ${SEED} round ${round}`);
      assert.ok(client.cat('b', f).equals(second), `seed ${SEED} round ${round}`);
      assert.deepEqual((await client.workspaceStatus(ws.id)).changes, [], `seed ${SEED} round ${round}: status after the second commit`);
    }
    // Each write and its commit are microseconds to milliseconds apart: most commits read within the tick.
    assert.ok(racy > 0, 'no commit read a file within its tick');
    assert.equal((await client.endWorkspace(ws.id)).outcome, 'Ended');
    assertIntact(client);
  } finally {
    store.close();
    client.close();
  }
});

test('racy entries that did not change: status lists nothing, the next commit is UpToDate and clears them', async () => {
  const { client, at, ws, store, cache } = await setup();
  try {
    await commitUntilRacy(client, at, ws.id, cache);
    assert.deepEqual((await client.workspaceStatus(ws.id)).changes, []);
    await new Promise((res) => setTimeout(res, RACY_TICK_MS + 5));
    const again = await client.commitWorkspace(ws.id);
    assert.equal(again.outcome, 'UpToDate');
    assert.equal(smudged(cache()), 0);
    assert.deepEqual((await client.workspaceStatus(ws.id)).changes, []);
    assertIntact(client);
  } finally {
    store.close();
    client.close();
  }
});

test('smudgeRacy: only changed files and symlinks read within their tick; whole-second times tick in seconds', () => {
  const ms = 1_700_000_000_123;
  const ns = (m: number, extra = 456_789n) => BigInt(m) * 1_000_000n + extra;
  const kind = Uint8Array.of(WalkKind.Dir, WalkKind.File, WalkKind.File, WalkKind.Symlink, WalkKind.Dir, WalkKind.File, WalkKind.File);
  const ctimeNs = BigInt64Array.of(ns(ms), ns(ms - 1), ns(ms - RACY_TICK_MS - 5), ns(ms - 3), ns(ms), ns(ms), ns(1_700_000_000_000, 0n));
  const c = { count: 7, kind, ctimeNs, size: new BigInt64Array(7).fill(5n) } as unknown as StatCache;
  const changed = Uint8Array.of(1, 1, 1, 1, 1, 0, 1);
  const out = smudgeRacy(c, changed, ms);
  assert.deepEqual([...out.size], [5n, SMUDGED_SIZE, 5n, SMUDGED_SIZE, 5n, 5n, SMUDGED_SIZE]);
  // The cache given is never modified in place.
  assert.deepEqual([...c.size], [5n, 5n, 5n, 5n, 5n, 5n, 5n]);
  assert.equal(smudgeRacy(c, changed, 1_700_000_000_000 + COARSE_TICK_MS + 1).size[6], 5n);
  assert.equal(smudgeRacy(c, new Uint8Array(7), ms), c);
});

/**
 * The race itself, made certain: a same-size write in the tick the commit read leaves size,
 * mtime and ctime as the walk saw them. The clock cannot be held, so the stat cache is given
 * the new write's times, as such a write would have left them; only the racy mark remains.
 */
test('a write whose stat equals the cached one is found when the commit read within the tick', async () => {
  const { client, at, ws, store, id, cache } = await setup();
  const f = 'd/f2.txt';
  const entry = (c: StatCache) => [...Array(c.count).keys()].find((i) => walkRelPath(c, i).toString() === f)!;
  /** The cache as it would be had `path`'s newest write shared the tick of the cached stat; `size` as given. */
  const sameTick = (size: bigint): void => {
    const c = cache();
    const i = entry(c);
    const st = lstatSync(join(at, f), { bigint: true });
    const next = { ...c, size: c.size.slice(), mtimeNs: c.mtimeNs.slice(), ctimeNs: c.ctimeNs.slice() };
    next.size[i] = size;
    next.mtimeNs[i] = st.mtimeNs;
    next.ctimeNs[i] = st.ctimeNs;
    store.writeSync(() => saveCache(store, id, next));
  };
  try {
    let round = 0;
    for (; round < 50; round++) {
      writeFileSync(join(at, f), `first ${round % 10}`);
      assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
      // The commit's read began before now: if now is still within the tick, so was the read.
      if (racyWaitMs(lstatSync(join(at, f), { bigint: true }).ctimeNs, Date.now()) > 0) break;
    }
    assert.ok(round < 50, 'no commit returned within the tick of its edit');
    assert.equal(cache().size[entry(cache())], SMUDGED_SIZE);
    writeFileSync(join(at, f), `secnd ${round % 10}`);
    sameTick(SMUDGED_SIZE);
    assert.deepEqual((await client.workspaceStatus(ws.id)).changes.map((c) => c.path), [f]);
    assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
    assert.equal(client.cat('b', f).toString(), `secnd ${round % 10}`);
    // Without the mark the same cache hides the write: the case the mark exists for.
    writeFileSync(join(at, f), `third ${round % 10}`);
    sameTick(BigInt(`third ${round % 10}`.length));
    assert.deepEqual((await client.workspaceStatus(ws.id)).changes, []);
    assertIntact(client);
  } finally {
    store.close();
    client.close();
  }
});

test('status writes the racy entries it confirmed back into the stat cache once their tick has passed, never while the lock is taken', async () => {
  const { client, at, ws, store, cache } = await setup();
  try {
    await commitUntilRacy(client, at, ws.id, cache);
    await new Promise((res) => setTimeout(res, RACY_TICK_MS + 5));
    // Another connection holds the write lock: the status answers, and leaves the cache alone.
    store.db.exec('BEGIN IMMEDIATE');
    try {
      assert.deepEqual((await client.workspaceStatus(ws.id)).changes, []);
    } finally {
      store.db.exec('ROLLBACK');
    }
    assert.ok(smudged(cache()) > 0, 'refreshed while another connection held the lock');
    assert.deepEqual((await client.workspaceStatus(ws.id)).changes, []);
    assert.equal(smudged(cache()), 0, 'the confirmed entries are written back');
    // A refreshed entry still catches a later write of the same size, at once.
    const size = lstatSync(join(at, 'd/f1.txt')).size;
    writeFileSync(join(at, 'd/f1.txt'), 'z'.repeat(size));
    assert.deepEqual((await client.workspaceStatus(ws.id)).changes.map((c) => [c.change, c.path]), [['modified', 'd/f1.txt']]);
    assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
    assert.ok(client.cat('b', 'd/f1.txt').equals(Buffer.from('z'.repeat(size))));
    assertIntact(client);
  } finally {
    store.close();
    client.close();
  }
});

test(`files a reconciling commit writes into the Workspace are marked, not waited for: a same-size write at once is found (seed ${SEED})`, async () => {
  const r = new Rng(SEED);
  const { client, at, ws, store, cache } = await setup();
  const other = await client.createWorkspace('b', { at: `${at}-other` });
  const entry = (c: StatCache, f: string) => [...Array(c.count).keys()].find((i) => walkRelPath(c, i).toString() === f)!;
  try {
    let marked = 0;
    // 20 rounds; on a machine slow enough that no reconciliation ended within the tick, more (bounded).
    for (let round = 0; round < 20 || (marked === 0 && round < 100); round++) {
      const f = `d/f${r.below(FILES)}.txt`;
      const n = 1 + r.below(100);
      const theirs = bytes(r, n);
      let mine = bytes(r, n);
      if (mine.equals(theirs)) mine = Buffer.from(theirs.map((c) => (c === 0x61 ? 0x62 : 0x61)));
      // The other Workspace moves the head; this one commits an unrelated change and reconciles,
      // which writes the other's file here.
      writeFileSync(join(other.path, f), theirs);
      assert.equal((await client.commitWorkspace(other.id)).outcome, 'Created');
      writeFileSync(join(at, `own-${round}.txt`), `own ${round}`);
      const c1 = await client.commitWorkspace(ws.id);
      assert.equal(c1.outcome, 'Created', `seed ${SEED} round ${round}`);
      assert.ok(c1.outcome === 'Created' && c1.reconciled, `seed ${SEED} round ${round}: reconciled`);
      // Returned within the tick of the file it wrote in: its entry is marked.
      if (racyWaitMs(lstatSync(join(at, f), { bigint: true }).ctimeNs, Date.now()) > 0) {
        assert.equal(cache().size[entry(cache(), f)], SMUDGED_SIZE, `seed ${SEED} round ${round}: marked`);
        marked++;
      }
      // Same size, at once.
      writeFileSync(join(at, f), mine);
      assert.ok(client.cat('b', f).equals(theirs), `seed ${SEED} round ${round}: the head's file`);
      const st = await client.workspaceStatus(ws.id);
      assert.deepEqual(st.changes.map((c) => [c.change, c.path]), [['modified', f]], `seed ${SEED} round ${round}: the write after the reconciliation`);
      assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
      assert.ok(client.cat('b', f).equals(mine), `seed ${SEED} round ${round}`);
      // The other Workspace takes this one's writes before the next round (update writes them in
      // the same way, marked rather than waited for), and shows them exactly.
      assert.equal((await client.updateWorkspace(other.id)).outcome, 'Updated', `seed ${SEED} round ${round}`);
      assert.ok(readFileSync(join(other.path, f)).equals(mine), `seed ${SEED} round ${round}: updated`);
      assert.deepEqual((await client.workspaceStatus(other.id)).changes, [], `seed ${SEED} round ${round}: status after the update`);
    }
    assert.ok(marked > 0, 'no reconciling commit ended within the tick of its writes');
    assertIntact(client);
  } finally {
    store.close();
    client.close();
  }
});

test('`layerfs workspace status` refreshes the stat cache when it can write the Store as it is, and opens it read-only otherwise', async () => {
  const { dir, storePath, client, at, ws, store, cache } = await setup();
  try {
    await commitUntilRacy(client, at, ws.id, cache);
    await new Promise((res) => setTimeout(res, RACY_TICK_MS + 5));
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    assert.equal(writableAsIs(storePath), true);
    const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json') };
    const r = cli(['--json', '--store', storePath, 'workspace', 'status', ws.id], env);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.json.changes, []);
    assert.equal(smudged(cache()), 0, 'the command wrote the confirmed entries back');
    // A header of another format (a writable open would upgrade it), a file that is no Store, a
    // missing one: never opened writable.
    const older = join(dir, 'older.sqlite');
    copyFileSync(storePath, older);
    const head = readFileSync(older);
    head.writeUInt32BE(FORMAT_VERSION - 1, 60);
    writeFileSync(older, head);
    assert.equal(writableAsIs(older), false);
    writeFileSync(join(dir, 'not-a-store'), Buffer.alloc(4096));
    assert.equal(writableAsIs(join(dir, 'not-a-store')), false);
    assert.equal(writableAsIs(join(dir, 'missing.sqlite')), false);
    assertIntact(client);
  } finally {
    store.close();
    client.close();
  }
});
