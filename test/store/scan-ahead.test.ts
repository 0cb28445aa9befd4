import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScanAhead, type PathList } from '../../lib/store/index.js';
import type { ScanEntryOk } from '../../lib/native/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

// divide 8: batches of 64 entries and 768 KiB of arena, so files of 100 KiB overflow a batch.
const DIVIDE = 8;

/** `n` files of `size` bytes each but every fifth, of 1 KiB: their paths and sizes. */
function files(n: number, size: number): { paths: Buffer[]; sizes: number[] } {
  const dir = tempDir();
  const paths: Buffer[] = [];
  const sizes: number[] = [];
  for (let i = 0; i < n; i++) {
    const p = join(dir, `f${String(i).padStart(3, '0')}`);
    const s = i % 5 === 4 ? 1024 : size;
    writeFileSync(p, seededBytes(i + 1, s));
    paths.push(Buffer.from(p));
    sizes.push(s);
  }
  return { paths, sizes };
}

/** Every entry of every batch, in order: [path, bytes read with the scan or undefined]. */
async function scanAll(list: PathList): Promise<{ entries: [string, Buffer | undefined][]; batches: number }> {
  const scans = new ScanAhead(list, { divide: DIVIDE, xattrs: false });
  const entries: [string, Buffer | undefined][] = [];
  let batches = 0;
  const clock = { waitMs: 0 };
  while (!scans.done) {
    const { batch, paths, release } = await scans.next(clock);
    batches++;
    assert.equal(batch.count, paths.length);
    for (let j = 0; j < batch.count; j++) {
      const e = batch.entry(j) as ScanEntryOk;
      assert.equal(e.error, undefined);
      assert.equal(Buffer.from(e.path as Buffer).toString(), paths[j]!.toString());
      // Copied: the arena is reused once the batch is released.
      entries.push([paths[j]!.toString(), e.data ? Buffer.from(e.data) : undefined]);
    }
    release();
  }
  return { entries, batches };
}

test('files that overflow a batch arena are read again at once, in order, with their own bytes', async () => {
  const { paths } = files(150, 100 * 1024);
  const { entries } = await scanAll({ count: paths.length, path: (i) => paths[i]! });
  assert.deepEqual(
    entries.map((e) => e[0]),
    paths.map((p) => p.toString()),
  );
  let read = 0;
  for (const [p, data] of entries) {
    if (!data) continue;
    read++;
    assert.ok(data.equals(readFileSync(p)), p);
  }
  // Without sizes a batch of 64 entries has 768 KiB of arena for its ~51 large files: 7 of them
  // and its small ones fit (51 files over the three batches); its second read takes 7 more.
  assert.ok(read > 51, `read ${read} of 150 with the scans`);
  assert.ok(read < 150, 'without sizes some files are left to read alone');
});

test('with the listed sizes, batches end where the arena is full and every file comes back read', async () => {
  const { paths, sizes } = files(150, 100 * 1024);
  const { entries, batches } = await scanAll({ count: paths.length, path: (i) => paths[i]!, size: (i) => sizes[i]! });
  assert.deepEqual(
    entries.map((e) => e[0]),
    paths.map((p) => p.toString()),
  );
  for (const [p, data] of entries) {
    assert.ok(data, `${p} read with its batch`);
    assert.ok(data.equals(readFileSync(p)), p);
  }
  // 120 files of 100 KiB, 7 to an arena of 768 KiB (with the small ones between them).
  assert.ok(batches >= 17, `${batches} batches`);
});

test('a file that grew since it was listed is left unread, not cut short', async () => {
  const { paths, sizes } = files(20, 100 * 1024);
  // Listed small, now large: the batch takes all 20, and the arena cannot hold them.
  const listed = sizes.map(() => 1024);
  const { entries } = await scanAll({ count: paths.length, path: (i) => paths[i]!, size: (i) => listed[i]! });
  assert.equal(entries.length, 20);
  for (const [p, data] of entries) if (data) assert.ok(data.equals(readFileSync(p)), p);
  assert.ok(entries.some(([, data]) => !data));
});
