// Cell: peak RSS of `db gc` on a generated Store of many objects (issue 23: ≤ 256 MiB at 10
// million). The Store is written directly through the store tier (an import of millions of
// files would take hours): LayerStack `live` holds --files files of --chunks chunks each (tiny
// unique chunks under extent trees), LayerStack `garbage` as many other ones, then deleted. Then
// gc runs in a process of its own under /usr/bin/time (ms, maxRssMiB are that process's).
//   node --import tsx bench/cells/layerfs-gc-big.ts --tmp SCRATCH --tier T --files 50 --chunks 100000

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { cellArgs, requireArgs } from '../lib/args.js';
import { emit, fail, timeExternal } from '../lib/cell.js';
import { storeFiles } from './_branches-sdk.js';

const CELL = 'layerfs-gc-big';
const a = cellArgs({ files: { type: 'string', default: '50' }, chunks: { type: 'string', default: '100000' }, run: { type: 'string' }, out: { type: 'string' } });
const tier = a.tier!;
const LIB = new URL('../../lib/', import.meta.url);
const lib = async <T>(p: string) => (await import(new URL(p, LIB).href)) as T;

interface StoreMod {
  Store: { open(p: string): BigStore; create(p: string): BigStore };
  ObjectKind: { Chunk: number; Extents: number };
  InodeKind: { File: number; Dir: number };
  ContentForm: { Extents: number; None: number };
  buildNamespace(inodes: Map<number, unknown>, children: Map<number, { name: Buffer; serial: number }[]>, w: unknown, pages: unknown): Buffer;
}
interface BigStore {
  db: { prepare(sql: string): { run(...a: unknown[]): unknown } };
  pages: unknown;
  write<T>(fn: (w: { add(kind: number, data: Uint8Array): Buffer }) => Promise<T> | T): Promise<T>;
  close(): void;
}

/** One LayerStack of `files` files of `chunks` unique 16-byte chunks each (seeded by `tag`). */
async function stack(m: StoreMod, h: { layerId(s: Buffer, p: Buffer | null, r: Buffer): Buffer; uuidv7(): Buffer }, ext: { buildExtentTree(e: { id: Buffer; length: number }[], save: (n: Buffer) => Buffer): Buffer }, s: BigStore, name: string, files: number, chunks: number): Promise<void> {
  await s.write((w) => {
    const inodes = new Map<number, unknown>();
    const dir = (content: null) => ({ kind: m.InodeKind.Dir, mode: 0o755, uid: 0, gid: 0, mtimeNs: 0n, size: 0, nlink: 1, form: m.ContentForm.None, content, xattrs: [] });
    inodes.set(1, dir(null));
    const list: { name: Buffer; serial: number }[] = [];
    for (let f = 0; f < files; f++) {
      const extents: { id: Buffer; length: number }[] = [];
      for (let i = 0; i < chunks; i++) {
        const data = Buffer.alloc(16);
        data.write(`${name}:${f}:${i}`.slice(0, 16));
        data.writeUInt32LE(i, 12);
        extents.push({ id: w.add(m.ObjectKind.Chunk, data), length: 16 });
      }
      const root = ext.buildExtentTree(extents, (node) => w.add(m.ObjectKind.Extents, node));
      inodes.set(2 + f, { kind: m.InodeKind.File, mode: 0o644, uid: 0, gid: 0, mtimeNs: 0n, size: chunks * 16, nlink: 1, form: m.ContentForm.Extents, content: root, xattrs: [] });
      list.push({ name: Buffer.from(`f${String(f).padStart(4, '0')}`), serial: 2 + f });
    }
    const rootId = m.buildNamespace(inodes, new Map([[1, list]]), w, s.pages);
    const stackId = h.uuidv7();
    const id = h.layerId(stackId, null, rootId);
    s.db.prepare('INSERT INTO layer_stacks (id, name, head_layer_id, created_ms) VALUES (?, ?, ?, ?)').run(stackId, name, id, Date.now());
    s.db.prepare('INSERT INTO layers (id, layer_stack_id, seq, parent_layer_id, root_id, source_branch_id, source_commit_id, created_ms) VALUES (?, ?, 0, NULL, ?, NULL, NULL, ?)').run(id, stackId, rootId, Date.now());
  });
}

try {
  if (a.run !== undefined) {
    // The measured process: gc alone.
    const sdk = await lib<{ Client: { connect(p: string): { gc(): Promise<Record<string, number>>; close(): void } } }>('sdk/index.js');
    const c = sdk.Client.connect(a.run);
    const r = await c.gc();
    c.close();
    fs.writeFileSync(a.out!, JSON.stringify(r));
    process.exit(0);
  }
  requireArgs(a, ['tmp']);
  const files = Number(a.files);
  const chunks = Number(a.chunks);
  const store = path.join(path.resolve(a.tmp!), 'big.layerfs');
  const m = await lib<StoreMod>('store/index.js');
  const h = await lib<{ layerId(s: Buffer, p: Buffer | null, r: Buffer): Buffer; uuidv7(): Buffer }>('history/index.js');
  const ext = await lib<{ buildExtentTree(e: { id: Buffer; length: number }[], save: (n: Buffer) => Buffer): Buffer }>('store/tree/extents.js');
  const t0 = performance.now();
  const s = m.Store.create(store);
  await stack(m, h, ext, s, 'live', files, chunks);
  await stack(m, h, ext, s, 'garbage', files, chunks);
  s.close();
  const sdk = await lib<{ Client: { connect(p: string): { deleteLayerStack(r: string): unknown; info(): { objects: number }; close(): void } } }>('sdk/index.js');
  const c = sdk.Client.connect(store);
  const objects = c.info().objects;
  c.deleteLayerStack('garbage');
  c.close();
  const generateMs = performance.now() - t0;
  const before = storeFiles(store).bytes;
  const out = path.join(path.resolve(a.tmp!), 'gc.json');
  const run = timeExternal([process.execPath, ...process.execArgv, fileURLToPath(import.meta.url), '--run', store, '--out', out, '--tier', tier]);
  const r = JSON.parse(fs.readFileSync(out, 'utf8')) as Record<string, number>;
  emit({
    cell: CELL,
    tier,
    ms: Math.round(r.ms!),
    maxRssMiB: Math.round(run.maxRssMiB * 10) / 10,
    objects,
    deletedObjects: r.deletedObjects,
    liveObjects: r.liveObjects,
    markMs: Math.round(r.markMs!),
    sweepMs: Math.round(r.sweepMs!),
    transactions: r.transactions,
    generateMs: Math.round(generateMs),
    beforeBytes: before,
    storeBytes: storeFiles(store).bytes,
  });
} catch (err) {
  fail(CELL, tier, err);
}
