/**
 * Reconciling commits of range edits (`editWorkspaceFileRanges`) of one binary file by several
 * Workspaces of one Branch, on both projections: disjoint edits all land and the file holds every
 * one; an overlapping edit is Conflicted and nothing is published; a SQLite file is never merged
 * byte by byte. Every test ends with the Store verified.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, type RangeEdit } from '../../lib/sdk/index.js';
import { detachStale, fuseAvailable } from '../../lib/fuse/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

const SIZE = 256 * 1024;

async function setup(projection: 'materialize' | 'fuse', extra: Record<string, Buffer> = {}) {
  const dir = tempDir('layerfs-ranges-');
  const src = join(dir, 'src');
  const base = seededBytes(21, SIZE);
  base[0] = 0; // not text
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'disk.img'), base);
  for (const [name, data] of Object.entries(extra)) writeFileSync(join(src, name), data);
  const client = Client.create(join(dir, 'store.sqlite'));
  const layer = (await client.initLayerStack({ name: 'p', source: src })).layer.id;
  client.forkBranch({ name: 'shared', layer });
  return { dir, client, base, projection };
}

const fill = (n: number, v: number) => Buffer.alloc(n, v);

async function cleanup(client: Client, projection: string, paths: string[]): Promise<void> {
  if (projection === 'fuse') {
    await client.stopDaemon({ discard: true }).catch(() => {});
    for (const p of paths) await detachStale(p).catch(() => false);
  }
  client.close();
}

const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

for (const projection of ['materialize', 'fuse'] as const) {
  test(`${projection}: disjoint range edits by three Workspaces all land; an overlapping one is Conflicted`, { skip: projection === 'fuse' && fuseSkip, timeout: 300_000 }, async () => {
    const { dir, client, base } = await setup(projection);
    const paths: string[] = [];
    try {
      const ws = [];
      for (let i = 0; i < 4; i++) {
        paths.push(join(dir, `w${i}`));
        ws.push(await client.createWorkspace('shared', { at: paths[i]!, projection }));
      }
      const edits: RangeEdit[][] = [
        [{ path: 'disk.img', start: 4096, deleteLength: 4096, replacement: fill(4096, 0xa1) }],
        [{ path: 'disk.img', start: 65536, deleteLength: 100, replacement: { zero: 100 } }, { path: 'disk.img', start: 200_000, deleteLength: 8, replacement: fill(8, 0xa2) }],
        [{ path: 'disk.img', start: 8192, deleteLength: 1, replacement: fill(1, 0xa3) }], // touches w0's edit: same length, so it still merges
        [{ path: 'disk.img', start: 6000, deleteLength: 10, replacement: fill(10, 0xa4) }], // inside w0's edit
      ];
      for (let i = 0; i < 4; i++) client.editWorkspaceFileRanges(ws[i]!.id, edits[i]!);
      let expected = Buffer.from(base);
      for (let i = 0; i < 3; i++) {
        const r = await client.commitWorkspace(ws[i]!.id, { message: `w${i}` });
        assert.equal(r.outcome, 'Created', `w${i}`);
        if (i > 0) assert.ok(r.outcome === 'Created' && r.reconciled?.merged.includes('disk.img'), `w${i} merged disk.img`);
        for (const e of edits[i]!) (Buffer.isBuffer(e.replacement) ? e.replacement : Buffer.alloc(e.replacement.zero)).copy(expected, e.start);
        assert.deepEqual(Buffer.concat([...client.readFile('shared', 'disk.img')]), expected, `head after w${i}`);
        assert.deepEqual(readFileSync(join(paths[i]!, 'disk.img')), expected, `w${i} shows the merged file`);
      }
      const log = client.log('shared').length;
      const c = await client.commitWorkspace(ws[3]!.id, { message: 'w3' });
      assert.equal(c.outcome, 'Conflicted');
      assert.deepEqual(client.workspaceConflicts(ws[3]!.id).map((x) => `${x.kind} ${x.path}`), ['binary disk.img']);
      assert.match(client.workspaceConflicts(ws[3]!.id)[0]!.message, /both sides changed bytes \d+-\d+ differently/);
      assert.equal(client.log('shared').length, log, 'nothing was published');
      expected = Buffer.concat([...client.readFile('shared', 'disk.img')]);
      assert.equal(expected.subarray(6000, 6010).equals(fill(10, 0xa1)), true, 'the head keeps its bytes');
      for (const w of ws) await client.endWorkspace(w.id, { discard: true });
      assertIntact(client);
    } finally {
      await cleanup(client, projection, paths);
    }
  });

  test(`${projection}: length-changing range edits merge when apart, conflict when they touch`, { skip: projection === 'fuse' && fuseSkip, timeout: 300_000 }, async () => {
    const { dir, client, base } = await setup(projection);
    const paths: string[] = [];
    try {
      const ws = [];
      for (let i = 0; i < 3; i++) {
        paths.push(join(dir, `w${i}`));
        ws.push(await client.createWorkspace('shared', { at: paths[i]!, projection }));
      }
      client.editWorkspaceFileRanges(ws[0]!.id, [{ path: 'disk.img', start: 1000, deleteLength: 0, replacement: Buffer.from('inserted by w0') }]);
      client.editWorkspaceFileRanges(ws[1]!.id, [{ path: 'disk.img', start: 200_000, deleteLength: 50, replacement: fill(10, 0xb1) }]);
      client.editWorkspaceFileRanges(ws[2]!.id, [{ path: 'disk.img', start: 990, deleteLength: 10, replacement: fill(3, 0xb2) }]); // ends where w0 inserted
      assert.equal((await client.commitWorkspace(ws[0]!.id)).outcome, 'Created');
      const r = await client.commitWorkspace(ws[1]!.id);
      assert.ok(r.outcome === 'Created' && r.reconciled?.merged.includes('disk.img'), r.outcome);
      const expected = Buffer.concat([base.subarray(0, 1000), Buffer.from('inserted by w0'), base.subarray(1000, 200_000), fill(10, 0xb1), base.subarray(200_050)]);
      assert.deepEqual(Buffer.concat([...client.readFile('shared', 'disk.img')]), expected);
      // A FUSE Workspace read w0's version (and w1's edit) before the merge made the file longer:
      // the kernel's cached size and pages of it are invalidated by the commit.
      assert.deepEqual(readFileSync(join(paths[1]!, 'disk.img')), expected, 'w1 shows the merged file');
      const c = await client.commitWorkspace(ws[2]!.id);
      assert.equal(c.outcome, 'Conflicted');
      assert.deepEqual(client.workspaceConflicts(ws[2]!.id).map((x) => x.kind), ['binary']);
      for (const w of ws) await client.endWorkspace(w.id, { discard: true });
      assertIntact(client);
    } finally {
      await cleanup(client, projection, paths);
    }
  });
}

test('a SQLite file edited in different pages by two Workspaces conflicts (never merged byte by byte)', async () => {
  const db = Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), seededBytes(22, 8192 - 16)]);
  const { dir, client } = await setup('materialize', { 'app.db': db });
  try {
    const w1 = await client.createWorkspace('shared', { at: join(dir, 'w1'), projection: 'materialize' });
    const w2 = await client.createWorkspace('shared', { at: join(dir, 'w2'), projection: 'materialize' });
    client.editWorkspaceFileRanges(w1.id, [{ path: 'app.db', start: 4096, deleteLength: 16, replacement: fill(16, 1) }]);
    client.editWorkspaceFileRanges(w2.id, [{ path: 'app.db', start: 6000, deleteLength: 16, replacement: fill(16, 2) }]);
    assert.equal((await client.commitWorkspace(w1.id)).outcome, 'Created');
    assert.equal((await client.commitWorkspace(w2.id)).outcome, 'Conflicted');
    assert.match(client.workspaceConflicts(w2.id)[0]!.message, /a SQLite file changed on both sides/);
    assertIntact(client);
  } finally {
    client.close();
  }
});
