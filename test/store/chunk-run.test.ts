// Streamed reads of whole files through chunk runs (FsView.content over lib/store ChunkRunReader,
// decoded and verified in the addon): files of raw, zstd and mixed chunk rows, and a file edited
// in a Workspace (its new chunks deltas or in group frames) read byte for byte as written; a
// damaged raw or zstd row fails with ERR_CORRUPT, and every piece yielded before the failure is
// the file's true bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { LayerFsError } from '../../lib/errors.js';
import { chunkAndHash } from '../../lib/native/index.js';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const MIB = 1024 * 1024;

function text(n: number, salt: number): Buffer {
  const lines: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < n; i++) {
    const l = `line ${(i * 7 + salt) % 997} of a compressible file ${i % 13}\n`;
    lines.push(l);
    bytes += l.length;
  }
  return Buffer.from(lines.join('')).subarray(0, n);
}

function fill(src: string): void {
  writeFileSync(join(src, 'random.bin'), seededBytes(21, 5 * MIB + 333));
  writeFileSync(join(src, 'text.bin'), text(6 * MIB + 17, 1));
  // Alternating compressible and random MiBs: rows of both forms, stretches across them.
  writeFileSync(join(src, 'mixed.bin'), Buffer.concat([text(MIB, 2), seededBytes(22, MIB), text(MIB, 3), seededBytes(23, MIB + 5)]));
}

function streamed(c: Client, ref: string, name: string): { bytes: Buffer; pieces: number } {
  const pieces = [...c.readFile(ref, name)];
  return { bytes: Buffer.concat(pieces), pieces: pieces.length };
}

test('streamed reads through chunk runs equal the files, imported and edited', { timeout: 180_000 }, async () => {
  const dir = tempDir('layerfs-chunk-run-');
  const src = join(dir, 'src');
  const storePath = join(dir, 's.layerfs');
  mkdirSync(src);
  fill(src);
  const c = Client.create(storePath);
  try {
    const init = await c.initLayerStack({ name: 'p', source: src });
    for (const name of ['random.bin', 'text.bin', 'mixed.bin']) {
      const got = streamed(c, init.layer.id, name);
      assert.ok(got.bytes.equals(readFileSync(join(src, name))), `${name} read back`);
      assert.ok(got.pieces < 64, `${name} in ${got.pieces} pieces (whole runs, not chunks)`);
    }
    // Edit the middle and the end of text.bin and mixed.bin in a Workspace: new chunks stored as
    // deltas or in group frames, next to the old rows.
    c.forkBranch({ name: 'main', layer: init.layer.id });
    const ws = await c.createWorkspace('main', { at: join(dir, 'ws'), projection: 'materialize' });
    for (const name of ['text.bin', 'mixed.bin']) {
      const fd = openSync(join(dir, 'ws', name), 'r+');
      writeSync(fd, Buffer.from('an edit in the middle of the file'), 0, 33, 2 * MIB + 100);
      writeSync(fd, Buffer.from('and one more'), 0, 12, 3 * MIB + 9000);
      closeSync(fd);
    }
    await c.commitWorkspace(ws.id);
    for (const name of ['text.bin', 'mixed.bin', 'random.bin']) {
      const got = streamed(c, 'main', name);
      assert.ok(got.bytes.equals(readFileSync(join(dir, 'ws', name))), `${name} read back after the edit`);
    }
    assertIntact(c);
  } finally {
    c.close();
  }
});

for (const codec of [0, 1]) {
  test(`a damaged ${codec === 0 ? 'raw' : 'zstd'} chunk row fails the streamed read with ERR_CORRUPT, after only true bytes`, { timeout: 120_000 }, async () => {
    const dir = tempDir('layerfs-chunk-run-damage-');
    const src = join(dir, 'src');
      mkdirSync(src);
    fill(src);
    const storePath = join(dir, 's.layerfs');
    let c = Client.create(storePath);
    const init = await c.initLayerStack({ name: 'p', source: src });
    await c.close();
    const name = codec === 0 ? 'random.bin' : 'text.bin';
    const store = Store.open(storePath);
    try {
      // A chunk in the middle of the file, damaged in the middle of its stored bytes.
      const chunks = chunkAndHash(readFileSync(join(src, name)));
      const loc = store.objects.locator(chunks[chunks.length >> 1]!.id)!;
      assert.equal(loc.codec, codec);
      const data = store.db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(loc.pack) as Buffer;
      const at = loc.offset + (loc.length >> 1);
      data[at] = data[at]! ^ 0x5a;
      store.db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(data, loc.pack);
    } finally {
      store.close();
    }
    c = Client.connect(storePath);
    try {
      const want = readFileSync(join(src, name));
      let at = 0;
      assert.throws(
        () => {
          for (const piece of c.readFile(init.layer.id, name)) {
            assert.ok(piece.equals(want.subarray(at, at + piece.length)), `bytes at ${at} are the file's`);
            at += piece.length;
          }
        },
        (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT',
      );
      assert.ok(at < want.length, 'the read stopped at the damage');
    } finally {
      await c.close();
    }
  });
}
