// Property test of a live file's content over a real Store (Overlay → FileData → the native
// copy-on-write core): random writes, truncations and reads of a stored large file, compared byte
// for byte with a plain Buffer, and commits whose extent lists must equal chunking the whole
// Buffer. Spools in memory (spilling to files) and always in files. Replay with
// LAYERFS_COW_SEED=<seed printed below>.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constants as fsc, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { ContentForm, InodeKind, Store } from '../../lib/store/index.js';
import { chunkAndHash } from '../../lib/native/index.js';
import { Overlay } from '../../lib/fuse/overlay.js';
import { rng } from '../helpers/edits.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

const SEED = Number(process.env.LAYERFS_COW_SEED ?? Date.now() % 0x7fffffff);
console.log(`mount cow-model seed ${SEED} (LAYERFS_COW_SEED=${SEED} to replay)`);
const fromHex = (h: string) => Buffer.from(h, 'hex');

function resize(model: Buffer, size: number): Buffer {
  if (size <= model.length) return Buffer.from(model.subarray(0, size));
  return Buffer.concat([model, Buffer.alloc(size - model.length)]);
}

function storedChunkIds(store: Store, rootId: Buffer, ov: Overlay): string[] {
  const { inode } = store.view(rootId).resolve([Buffer.from('big.bin')], 'big.bin');
  assert.equal(inode.kind, InodeKind.File);
  if (inode.form !== ContentForm.Extents) return [];
  return ov.cache.chunkIds({ form: inode.form, id: inode.content, size: inode.size }).map((x) => x.toString('hex'));
}

for (const [label, budget] of [['spools in memory, spilling to files', undefined], ['spools always in files', 0]] as const) {
  test(`a stored file under random writes, truncations, reads and commits reads as a plain Buffer (${label}, seed ${SEED})`, async () => {
    const r = rng(SEED + (budget === 0 ? 1 : 0));
    const pick = (n: number) => Math.floor(r() * n);
    const original = seededBytes(SEED, 1_500_000 + pick(500_000));
    const dir = tempDir('layerfs-cow-model-');
    const src = join(dir, 'src');
    mkdirSync(src);
    writeFileSync(join(src, 'big.bin'), original);
    const client = Client.create(join(dir, 'store.sqlite'));
    const store = Store.open(join(dir, 'store.sqlite'));
    try {
      const init = await client.initLayerStack({ name: 'p', source: src });
      client.forkBranch({ name: 'main', layer: init.layer.id });
      const info = client.branch('main');
      mkdirSync(join(dir, 'spool'));
      const ov = new Overlay(store, fromHex(info.rootId), { branchId: fromHex(info.id), expectedHead: info.headCommitId ? fromHex(info.headCommitId) : null, expectedBase: fromHex(info.baseLayerId) }, { spoolDir: join(dir, 'spool'), ...(budget === undefined ? {} : { memoryBudget: budget }) });
      const serial = ov.lookup(1, Buffer.from('big.bin'));
      const fh = ov.open(serial, fsc.O_RDWR);
      let model: Buffer = Buffer.from(original);
      const log: string[] = [];
      const where = () => `seed ${SEED}: ${log.slice(-6).join('; ')}`;
      let commits = 0;
      let dirty = false;
      // Scattered dirty pages (one byte every other page): reads merge many spool segments.
      for (let p = 100; p < 1_000_000; p += 8192) {
        ov.write(fh, Buffer.from([p & 0xff]), p);
        model[p] = p & 0xff;
      }
      for (const [from, len] of [[0, 1_000_000], [5000, 70_000], [8192, 4096 * 9]] as const) {
        const dst = Buffer.alloc(len);
        assert.equal(ov.read(fh, dst, len, from), len);
        assert.ok(dst.equals(model.subarray(from, from + len)), `scattered pages: read ${from}+${len}`);
      }
      dirty = true;
      for (let step = 0; step < 400; step++) {
        const op = pick(100);
        if (op < 45) {
          let pos = pick(model.length + 20_000);
          let len = 1 + pick(r() < 0.3 ? 64 : r() < 0.8 ? 12_000 : 300_000);
          if (r() < 0.2) {
            pos -= pos % 4096;
            // Pieces of 128 KiB and more go to a spool file with O_DIRECT (napi_write_behind.cc).
            len = 4096 * (r() < 0.5 ? 1 + pick(4) : 32 + pick(96));
          }
          const data = seededBytes(SEED + step, len);
          log.push(`write ${pos}+${len}`);
          assert.equal(ov.write(fh, data, pos), len);
          dirty = true;
          if (pos + len > model.length) model = resize(model, pos + len);
          data.copy(model, pos);
        } else if (op < 55) {
          const c = pick(5);
          // Mostly near the current size, so the file stays large (extents) most of the run.
          const size = c === 0 && r() < 0.3 ? 0 : c <= 1 ? model.length + pick(50_000) : c === 2 ? model.length - (model.length % 4096) : Math.max(0, model.length - pick(100_000));
          log.push(`truncate ${size}`);
          ov.ftruncate(fh, size);
          // A truncate marks mtime and ctime even when the size stays, as truncate(2) does on Linux.
          dirty = true;
          model = resize(model, size);
        } else if (op < 94) {
          const pos = pick(model.length + 100);
          const len = pick(140_000);
          log.push(`read ${pos}+${len}`);
          const dst = Buffer.alloc(len);
          const n = ov.read(fh, dst, len, pos);
          const want = model.subarray(Math.min(pos, model.length), Math.min(pos + len, model.length));
          assert.equal(n, want.length, `read length (${where()})`);
          assert.ok(dst.subarray(0, n).equals(want), `read ${pos}+${len} differs from the model (${where()})`);
        } else {
          log.push('commit');
          const c = await ov.commit();
          assert.equal(c.outcome, dirty ? 'Created' : 'UpToDate', where());
          dirty = false;
          if (c.outcome !== 'Created') continue;
          commits++;
          const want = model.length >= 131072 ? chunkAndHash(model).map((x) => x.id.toString('hex')) : [];
          assert.deepEqual(storedChunkIds(store, c.rootId, ov), want, `commit: the stored extents equal chunking the whole file (${where()})`);
        }
        assert.equal(ov.getattr(serial).size, model.length, `size (${where()})`);
      }
      const all = Buffer.alloc(model.length);
      assert.equal(ov.read(fh, all, model.length, 0), model.length);
      assert.ok(all.equals(model), `final content (${where()})`);
      ov.release(fh);
      console.log(`${label}: ${commits} commits, ${model.length} bytes at the end`);
      ov.dispose();
      assertIntact(client);
    } finally {
      store.close();
      client.close();
    }
  });
}
