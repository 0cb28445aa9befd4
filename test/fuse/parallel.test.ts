// Parallel serving of a kernel-backend mount: READs of unchanged stored content are answered by
// reader threads (own Store connections), byte for byte, while the serving thread keeps answering
// metadata; a written file is read back through the overlay and, once committed, by readers again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { lstat, open } from 'node:fs/promises';
import { join } from 'node:path';
import { commitFuse, daemonStatus } from '../../lib/fuse/index.js';
import { seededBytes } from '../helpers/tmp.js';
import { ok, setupStore, withMount, type StoreSetup } from './helpers.js';

const SIZE = 48 * 1024 * 1024;
const PIECE = 4 * 1024 * 1024;

function fillLarge(src: string): void {
  const fd = openSync(join(src, 'large.bin'), 'w');
  for (let i = 0; i < SIZE / PIECE; i++) writeSync(fd, seededBytes(500 + i, PIECE));
  closeSync(fd);
  const small = openSync(join(src, 'small.txt'), 'w');
  writeSync(small, 'small\n');
  closeSync(small);
}

function expectedHash(patch?: { at: number; data: Buffer }): string {
  const h = createHash('sha256');
  for (let i = 0; i < SIZE / PIECE; i++) {
    const p = Buffer.from(seededBytes(500 + i, PIECE));
    if (patch && patch.at >= i * PIECE && patch.at < (i + 1) * PIECE) patch.data.copy(p, patch.at - i * PIECE);
    h.update(p);
  }
  return h.digest('hex');
}

/** sha256 of a file read with O_DIRECT (every byte is a READ to the daemon, none from the page cache). */
async function directHash(path: string): Promise<string> {
  const out = await ok('sh', ['-c', `dd if="$1" bs=1M iflag=direct status=none | sha256sum`, 'sh', path]);
  return out.split(' ')[0]!;
}

async function handed(s: StoreSetup): Promise<number> {
  const st = await daemonStatus(s.storePath);
  return st?.mounts[0]?.requests?.READ_ON_READER_THREADS ?? 0;
}

/** The mount's reader threads start in the background: wait until they take READs. */
async function readersServing(s: StoreSetup, file: string): Promise<void> {
  for (let i = 0; i < 100 && (await handed(s)) === 0; i++) {
    await directHash(file);
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok((await handed(s)) > 0, 'reader threads answer READs');
}

test('reader threads answer READs of stored content; written content is read through the overlay until committed', { timeout: 300_000 }, async () => {
  const s = await setupStore(fillLarge, 'layerfs-par-read-');
  try {
    await withMount(s, async (m) => {
      assert.equal(m.backend, 'kernel');
      const f = join(m.path, 'large.bin');
      await readersServing(s, f);
      const before = await handed(s);
      assert.equal(await directHash(f), expectedHash());
      assert.ok((await handed(s)) - before >= SIZE / (1 << 20) - 1, 'every 1 MiB READ went to a reader');
      const patch = { at: 29 * 1024 * 1024 + 1000, data: seededBytes(77, 4096) };
      const fh = await open(f, 'r+');
      await fh.write(patch.data, 0, patch.data.length, patch.at);
      await fh.close();
      const written = await handed(s);
      assert.equal(await directHash(f), expectedHash(patch), 'the written file, merged with its stored pages');
      assert.equal(await handed(s), written, 'a written file is read by the serving thread');
      const c = await commitFuse(s.storePath, m.workspaceId);
      assert.equal(c.outcome, 'Created');
      assert.equal(await directHash(f), expectedHash(patch), 'the committed file');
      assert.ok((await handed(s)) > written, 'committed content goes to readers again');
    });
    assert.equal(s.client.verify().ok, true);
  } finally {
    s.client.close();
  }
});

test('stat stays answered while a long read runs through the same mount', { timeout: 300_000 }, async () => {
  const s = await setupStore(fillLarge, 'layerfs-par-stat-');
  try {
    await withMount(s, async (m) => {
      const f = join(m.path, 'large.bin');
      await readersServing(s, f);
      // O_DIRECT reads of the whole file, over and over, until told to stop.
      const reader = spawn('sh', ['-c', 'while :; do dd if="$1" of=/dev/null bs=1M iflag=direct status=none || exit 1; done', 'sh', f], { stdio: 'ignore' });
      const before = await handed(s);
      const lat: number[] = [];
      try {
        const until = performance.now() + 3000;
        for (let i = 0; performance.now() < until; i++) {
          const t0 = performance.now();
          // A fresh name each time: a LOOKUP the kernel has never cached.
          await assert.rejects(lstat(join(m.path, `absent-${i}`)), { code: 'ENOENT' });
          assert.equal((await lstat(join(m.path, 'small.txt'))).size, 6);
          lat.push(performance.now() - t0);
        }
        assert.equal(reader.exitCode, null, 'the read was still running');
      } finally {
        reader.kill();
      }
      lat.sort((a, b) => a - b);
      const median = lat[lat.length >> 1]!;
      process.stdout.write(`# ${lat.length} lookups during the read: median ${median.toFixed(2)} ms, max ${lat[lat.length - 1]!.toFixed(1)} ms; READs on reader threads meanwhile: ${(await handed(s)) - before}\n`);
      assert.ok(lat.length >= 20, `only ${lat.length} lookups answered in 3 s`);
      assert.ok((await handed(s)) - before > 0, 'the read ran on reader threads');
    });
  } finally {
    s.client.close();
  }
});
