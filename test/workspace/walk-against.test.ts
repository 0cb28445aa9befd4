import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, linkSync, mkdirSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { walkTreeAgainst, walkTreeAgainstSync, walkTreeSync } from '../../lib/native/index.js';
import type { StatCache } from '../../lib/workspace/cache.js';
import { computeChanges, computeChangesSync, diffWalk, type ChangeSet } from '../../lib/workspace/changes.js';
import { tempDir } from '../helpers/tmp.js';

function tree(): { dir: string; cache: StatCache } {
  const dir = join(tempDir(), 'ws');
  for (let d = 0; d < 4; d++) {
    mkdirSync(join(dir, `d${d}`, 'sub'), { recursive: true });
    for (let f = 0; f < 5; f++) writeFileSync(join(dir, `d${d}`, `f${f}.txt`), `file ${d}/${f}\n`);
    writeFileSync(join(dir, `d${d}`, 'sub', 'deep.txt'), 'deep\n');
  }
  linkSync(join(dir, 'd0/f0.txt'), join(dir, 'd1/hard.txt'));
  const walk = walkTreeSync(dir);
  // Serials as a materialize would give them: one per inode.
  const byIno = new Map<bigint, number>();
  const serial = new Uint32Array(walk.count);
  for (let i = 0; i < walk.count; i++) {
    let s = byIno.get(walk.ino[i]!);
    if (s === undefined) byIno.set(walk.ino[i]!, (s = byIno.size + 1));
    serial[i] = s;
  }
  return { dir, cache: { ...walk, serial, maxSerial: byIno.size } };
}

/** The facts a commit and the next cache use, in comparable form. */
function facts(cs: ChangeSet) {
  const { now } = cs;
  return {
    clean: cs.clean,
    changed: [...cs.changed],
    oldIndex: [...cs.oldIndex],
    changedSerials: [...cs.changedSerials].sort((a, b) => a[0] - b[0]),
    deletedSerials: [...cs.deletedSerials].sort(),
    names: cs.names.size,
    deletedPaths: cs.deletedPaths,
    now: {
      count: now.count,
      names: now.names.toString('latin1'),
      arrays: [now.nameOffsets, now.parent, now.kind, now.mode, now.ino, now.size, now.mtimeNs, now.ctimeNs, now.serial].map((a) => [...a]),
      maxSerial: now.maxSerial,
    },
  };
}

async function assertSameAsDiff(dir: string, cache: StatCache, want: 'same' | 'stats' | 'walk') {
  assert.equal((await walkTreeAgainst(dir, cache)).kind, want);
  assert.equal(walkTreeAgainstSync(dir, cache).kind, want);
  const full = facts(diffWalk(dir, walkTreeSync(dir), cache));
  assert.deepEqual(facts(await computeChanges(dir, cache)), full);
  assert.deepEqual(facts(computeChangesSync(dir, cache)), full);
}

test('walkTreeAgainst: nothing moved, stats only, or the whole walk; change sets equal diffWalk', async () => {
  const { dir, cache } = tree();
  await assertSameAsDiff(dir, cache, 'same');
  assert.equal((await computeChanges(dir, cache)).clean, true);

  // In place: content (same and other size), mode, times; a hard-linked file edited.
  writeFileSync(join(dir, 'd2/f1.txt'), 'FILE 2/1\n');
  writeFileSync(join(dir, 'd3/f4.txt'), 'longer content now\n');
  chmodSync(join(dir, 'd1/f2.txt'), 0o600);
  utimesSync(join(dir, 'd0/sub'), 1000, 1000);
  writeFileSync(join(dir, 'd1/hard.txt'), 'through the second name\n');
  await assertSameAsDiff(dir, cache, 'stats');
  const cs = await computeChanges(dir, cache);
  assert.equal(cs.clean, false);
  // The hard link's record lists both parents.
  const linked = [...cs.changedSerials.values()].find((c) => c.parents.length === 2);
  assert.ok(linked);
  // Caches are never modified in place.
  assert.deepEqual(facts(diffWalk(dir, walkTreeSync(dir), cache)), facts(cs));

  // Paths moved: the whole walk is returned and diffed in JS.
  writeFileSync(join(dir, 'd2/new.txt'), 'new\n');
  await assertSameAsDiff(dir, cache, 'walk');
  const { dir: dir2, cache: cache2 } = tree();
  writeFileSync(join(dir2, 'tmp'), 'replaced by rename\n');
  renameSync(join(dir2, 'tmp'), join(dir2, 'd3/f0.txt'));
  await assertSameAsDiff(dir2, cache2, 'walk');
});

test('walkTreeAgainst refuses a cache of the wrong shape', async () => {
  const { dir, cache } = tree();
  await assert.rejects(walkTreeAgainst(dir, { ...cache, mode: new Uint32Array(1) }), /not a typed array of the walk's shape/);
  assert.throws(() => walkTreeAgainstSync(dir, { ...cache, ino: new BigUint64Array(cache.count + 1) }), /not a typed array of the walk's shape/);
});
