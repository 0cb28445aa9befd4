// Letting go of clean nodes (Overlay.trim, called between requests by the kernel backend): after a
// trim every path reads, lists and reports changes exactly as before it, and the commit stores
// the same state. Driven in-process (nothing is mounted here).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constants as fsc, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { Overlay } from '../../lib/fuse/overlay.js';
import { tempDir } from '../helpers/tmp.js';

const b = (s: string) => Buffer.from(s);
const fromHex = (h: string) => Buffer.from(h, 'hex');

function resolve(ov: Overlay, p: string): number {
  return ov.resolve(p.split('/').filter(Boolean).map((x) => b(x)));
}

function readAll(ov: Overlay, serial: number): string {
  const fh = ov.open(serial, fsc.O_RDONLY);
  const out = Buffer.alloc(ov.getattr(serial).size);
  ov.read(fh, out, out.length, 0);
  ov.release(fh);
  return out.toString();
}

/** Every path under `dir` with its attributes (times included) and content. */
function snapshot(ov: Overlay, serial = 1, prefix = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const e of ov.readdir(serial)) {
    const name = e.name.toString();
    if (name === '.' || name === '..') continue;
    const p = `${prefix}/${name}`;
    const a = ov.getattr(e.serial);
    out[p] = { ...a, attrOfListing: { mode: e.attr.mode, size: e.attr.size } };
    if ((a.mode & fsc.S_IFMT) === fsc.S_IFDIR) Object.assign(out, snapshot(ov, e.serial, p));
    else if ((a.mode & fsc.S_IFMT) === fsc.S_IFREG) out[`${p}#content`] = readAll(ov, e.serial);
  }
  return out;
}

const held = (ov: Overlay) => (ov as unknown as { nodes: Map<number, unknown> }).nodes.size;

test('a trim lets clean nodes go and changes nothing anyone sees', async () => {
  const dir = tempDir('layerfs-trim-');
  const src = join(dir, 'src');
  for (const d of ['lib', 'lib/deep', 'other']) mkdirSync(join(src, d), { recursive: true });
  for (let i = 0; i < 30; i++) writeFileSync(join(src, 'lib', `f${i}`), `file ${i}\n`);
  for (let i = 0; i < 5; i++) writeFileSync(join(src, 'lib/deep', `g${i}`), `deep ${i}\n`);
  writeFileSync(join(src, 'other/x'), 'x\n');
  const client = Client.create(join(dir, 'store.sqlite'));
  const store = Store.open(join(dir, 'store.sqlite'));
  try {
    const init = await client.initLayerStack({ name: 'p', source: src });
    client.forkBranch({ name: 'main', layer: init.layer.id });
    mkdirSync(join(dir, 'spool'));
    const info = client.branch('main');
    const target = { branchId: fromHex(info.id), expectedHead: null, expectedBase: fromHex(info.baseLayerId) };
    const ov = new Overlay(store, fromHex(info.rootId), target, { spoolDir: join(dir, 'spool'), trimAfter: 4 });
    const before = snapshot(ov);
    const all = held(ov);
    const lib = resolve(ov, 'lib');
    ov.chmod(resolve(ov, 'lib/f1'), 0o600);
    const fh = ov.open(resolve(ov, 'lib/f2'), fsc.O_WRONLY);
    ov.write(fh, b('FILE'), 0);
    ov.release(fh);
    ov.utimens(resolve(ov, 'lib/f3'), 5_000_000_000n, null);
    const tmp = ov.create(lib, b('.f4.tmp'), 0o644);
    ov.write(tmp.fh, b('replaced\n'), 0);
    ov.release(tmp.fh);
    ov.rename(lib, b('.f4.tmp'), lib, b('f4'));
    ov.unlink(lib, b('f5'));
    ov.mkdir(resolve(ov, 'lib/deep'), b('sub'), 0o755);
    ov.release(ov.create(lib, b('.gone'), 0o644).fh);
    ov.unlink(lib, b('.gone'));
    const still = ov.open(resolve(ov, 'other/x'), fsc.O_RDONLY);
    const edited = snapshot(ov);
    const changes = ov.changes().changes;
    assert.notDeepEqual(edited, before);

    ov.trim();
    assert.ok(held(ov) < all / 2, `a trim keeps ${held(ov)} of ${all} nodes`);
    assert.deepEqual(snapshot(ov), edited);
    assert.deepEqual(ov.changes().changes, changes);
    assert.equal(readAll(ov, ov.serialOf(still)), 'x\n');
    ov.release(still);

    const done = ov.commitSync();
    assert.equal(done.outcome, 'Created');
    const fresh = new Overlay(store, ov.rootId, { ...target, expectedHead: null }, { spoolDir: join(dir, 'spool') });
    const committed = snapshot(fresh);
    const sameStored = (s: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(s).map(([k, v]) => [k, typeof v === 'string' ? v : { ...(v as object), atimeNs: 0n, ctimeNs: 0n }]));
    assert.deepEqual(sameStored(committed), sameStored(edited));
    assert.equal(committed['/lib/f4#content'], 'replaced\n');
    assert.equal(committed['/lib/f2#content'], 'FILE 2\n');
    assert.equal(committed['/lib/.gone'], undefined);
  } finally {
    store.close();
    client.close();
  }
});
