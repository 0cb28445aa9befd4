/**
 * Reconciling commits of a file over 64 MiB (merged chunk by chunk, never loaded whole) by
 * Workspaces of one Branch, on both projections: edits in different regions all land and the
 * head holds every one; an edit overlapping another is Conflicted with byte ranges; a child
 * process commits such a merge with its resident set rising far less than one version of the
 * file. Every test ends with the Store verified.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type RangeEdit } from '../../lib/sdk/index.js';
import { detachStale, fuseAvailable } from '../../lib/fuse/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const MIB = 1024 * 1024;
const SIZE = 80 * MIB;
const child = fileURLToPath(new URL('./reconcile-large-child.ts', import.meta.url));

async function setup() {
  const dir = tempDir('layerfs-large-');
  const src = join(dir, 'src');
  const base = randomBytes(SIZE);
  base[0] = 0;
  // The overlapping edit's bytes must all differ from the base, or the conflict's range would
  // shrink wherever a random base byte happens to equal the edit's.
  base.fill(0, MIB + 100, MIB + 110);
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'model.bin'), base);
  const client = Client.create(join(dir, 'store.sqlite'));
  const layer = (await client.initLayerStack({ name: 'p', source: src })).layer.id;
  client.forkBranch({ name: 'shared', layer });
  return { dir, client, base, layer };
}

const sha = (b: Buffer | Buffer[]) => createHash('sha256').update(Buffer.isBuffer(b) ? b : Buffer.concat(b)).digest('hex');
const headSha = (client: Client) => {
  const h = createHash('sha256');
  for (const piece of client.readFile('shared', 'model.bin')) h.update(piece);
  return h.digest('hex');
};
const fileSha = async (path: string) => {
  const h = createHash('sha256');
  for await (const piece of createReadStream(path)) h.update(piece as Buffer);
  return h.digest('hex');
};
const fill = (n: number, v: number) => Buffer.alloc(n, v);

/** The base with range edits applied (starts are in the base's offsets, edits apart). */
function applied(base: Buffer, edits: RangeEdit[]): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (const e of [...edits].sort((a, b) => a.start - b.start)) {
    out.push(base.subarray(at, e.start), Buffer.isBuffer(e.replacement) ? e.replacement : Buffer.alloc(e.replacement.zero));
    at = e.start + e.deleteLength;
  }
  out.push(base.subarray(at));
  return out;
}

const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

for (const projection of ['materialize', 'fuse'] as const) {
  test(`${projection}: edits of an 80 MiB file in different regions merge chunk by chunk; an overlapping one is Conflicted with byte ranges`, { skip: projection === 'fuse' && fuseSkip, timeout: 600_000 }, async () => {
    const { dir, client, base } = await setup();
    const paths = [0, 1, 2].map((i) => join(dir, `w${i}`));
    try {
      const ws = [];
      for (const p of paths) ws.push(await client.createWorkspace('shared', { at: p, projection }));
      const edits: RangeEdit[][] = [
        [{ path: 'model.bin', start: 1 * MIB, deleteLength: 4096, replacement: fill(4096, 0xa1) }, { path: 'model.bin', start: 70 * MIB, deleteLength: 0, replacement: fill(5000, 0xa2) }],
        [{ path: 'model.bin', start: 40 * MIB, deleteLength: 100_000, replacement: fill(10, 0xa3) }],
        [{ path: 'model.bin', start: 1 * MIB + 100, deleteLength: 10, replacement: fill(10, 0xa4) }], // inside w0's first edit
      ];
      for (let i = 0; i < 3; i++) client.editWorkspaceFileRanges(ws[i]!.id, edits[i]!);
      assert.equal((await client.commitWorkspace(ws[0]!.id, { message: 'w0' })).outcome, 'Created');
      const r = await client.commitWorkspace(ws[1]!.id, { message: 'w1' });
      assert.ok(r.outcome === 'Created' && r.reconciled?.merged.includes('model.bin'), `w1 merged model.bin: ${r.outcome}`);
      const expected = sha(applied(base, [...edits[0]!, ...edits[1]!]));
      assert.equal(headSha(client), expected, 'the head holds both Workspaces’ edits');
      if (projection === 'materialize') assert.equal(await fileSha(join(paths[1]!, 'model.bin')), expected, 'w1 shows the merged file');
      const log = client.log('shared').length;
      const c = await client.commitWorkspace(ws[2]!.id, { message: 'w2' });
      assert.equal(c.outcome, 'Conflicted');
      const [conflict, ...rest] = client.workspaceConflicts(ws[2]!.id);
      assert.equal(rest.length, 0);
      assert.equal(conflict!.kind, 'binary');
      assert.match(conflict!.message, /both sides changed bytes 1048676-1048685 differently/);
      assert.ok(conflict!.ranges?.some((x) => x.base[0] <= MIB + 100 && MIB + 110 <= x.base[1] && x.workspace[0] <= MIB + 100), JSON.stringify(conflict));
      assert.equal(client.log('shared').length, log, 'nothing was published');
      assert.equal(headSha(client), expected, 'the head keeps its bytes');
      for (const w of ws) await client.endWorkspace(w.id, { discard: true });
      assertIntact(client);
    } finally {
      if (projection === 'fuse') {
        await client.stopDaemon({ discard: true }).catch(() => {});
        for (const p of paths) await detachStale(p).catch(() => false);
      }
      client.close();
    }
  });
}

test('the merge of an 80 MiB file edited on both sides holds far less than the file in memory (child process, VmHWM)', { timeout: 600_000 }, async () => {
  const { dir, client, layer } = await setup();
  try {
    const e0: RangeEdit = { path: 'model.bin', start: 5 * MIB, deleteLength: 64, replacement: fill(64, 0xb1) };
    const e1: RangeEdit = { path: 'model.bin', start: 60 * MIB, deleteLength: 0, replacement: fill(777, 0xb2) };
    for (const [name, edit] of [['head', e0], ['ws', e1]] as const) {
      client.forkBranch({ name, layer });
      const w = await client.createWorkspace(name, { at: join(dir, name), projection: 'materialize' });
      client.editWorkspaceFileRanges(w.id, [edit]);
      assert.equal((await client.commitWorkspace(w.id)).outcome, 'Created');
      await client.endWorkspace(w.id);
    }
    client.close();
    const out = execFileSync(process.execPath, nodeArgs(child, join(dir, 'store.sqlite')), { encoding: 'utf8' });
    const r = JSON.parse(out.trim().split('\n').pop()!) as { outcome: string; merged?: string[]; riseMiB: number; ms: number };
    console.log(`merge of an ${SIZE / MIB} MiB file edited on both sides: resident set rose ${r.riseMiB.toFixed(1)} MiB, ${r.ms.toFixed(0)} ms`);
    assert.equal(r.outcome, 'Merged');
    assert.deepEqual(r.merged, ['model.bin']);
    // Holding even one version would raise it by 80 MiB; the chunk lists and a few chunks are under 1 MiB.
    assert.ok(r.riseMiB < 24, `the resident set rose ${r.riseMiB} MiB`);
  } finally {
    client.close();
  }
});
