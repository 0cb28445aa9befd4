/**
 * A small Store with a history for the repack tests: a seeded tree of text-like and random
 * files and two large files (chunk rows), imported, then a few Workspace commits of small edits
 * (file and page deltas, an edited large file's re-chunked pieces, and the chunks of a large
 * file replaced by its next release as deltas against the release before).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { seededBytes } from './tmp.js';
import { walkForCompare, type WalkRecord } from './treewalk.js';

const WORDS = 'the layer store commit value return function delta page index tree chunk branch'.split(' ');

function seededText(seed: number, n: number): Buffer {
  const r = seededBytes(seed, n);
  let s = '';
  for (let i = 0; s.length < n; i++) s += WORDS[r[i % n]! % WORDS.length] + (r[(i * 7) % n]! % 9 === 0 ? '\n' : ' ');
  return Buffer.from(s.slice(0, n));
}

export function makeSource(root: string, files = 240): void {
  for (let d = 0; d < 8; d++) {
    mkdirSync(join(root, `d${d}`), { recursive: true });
    for (let f = 0; f < files / 8; f++) {
      const seed = d * 1000 + f + 1;
      const size = 100 + ((d * 7 + f * 13) % 40) * 300;
      writeFileSync(join(root, `d${d}`, f % 2 ? `f${f}.bin` : `f${f}.txt`), f % 2 ? seededBytes(seed, size) : seededText(seed, size));
    }
  }
  writeFileSync(join(root, 'large.txt'), seededText(77, 600_000));
  writeFileSync(join(root, 'large.bin'), seededBytes(78, 400_000));
  writeFileSync(join(root, 'bundle.js'), release(seededText(79, 500_000), 0));
}

/** A generated file's release `r`: a version mark every 4 KiB, so nearly every chunk changes. */
function release(text: Buffer, r: number): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < text.length; at += 4096) parts.push(text.subarray(at, at + 4096), Buffer.from(`/*v${r}.${at}*/`));
  return Buffer.concat(parts);
}

/** Imports `src` as LayerStack `main`, forks Branch `work` and commits `rounds` rounds of edits. */
export async function makeHistory(store: string, src: string, wsDir: string, rounds = 4): Promise<void> {
  const c = Client.create(store);
  try {
    const init = await c.initLayerStack({ name: 'main', source: src });
    c.forkBranch({ name: 'work', layer: init.layer.id });
    await c.createWorkspace('work', { at: wsDir });
    for (let r = 1; r <= rounds; r++) {
      for (let d = 0; d < 8; d += 2) {
        const p = join(wsDir, `d${d}`, `f${(r * 2) % 30}.txt`);
        const old = readFileSync(p);
        writeFileSync(p, Buffer.concat([old.subarray(0, old.length >> 1), Buffer.from(` edit ${r} `), old.subarray(old.length >> 1)]));
      }
      const big = join(wsDir, 'large.txt');
      const b = readFileSync(big);
      b.write(`round ${r} was here`, 1000 + r * 50_000);
      writeFileSync(big, b);
      // A new release renamed over the old one: its new chunks become deltas against the old.
      writeFileSync(join(wsDir, 'bundle.js.tmp'), release(seededText(79, 500_000), r));
      renameSync(join(wsDir, 'bundle.js.tmp'), join(wsDir, 'bundle.js'));
      const res = await c.commitWorkspace(wsDir);
      assert.equal(res.outcome, 'Created');
    }
  } finally {
    c.close();
  }
}

/** Every state's tree (Layers and Commits), exported and walked, by state id. */
export function exportStates(store: string, scratch: string): Map<string, WalkRecord[]> {
  const c = Client.connect(store, { readonly: true });
  const out = new Map<string, WalkRecord[]>();
  try {
    const ids = [...c.layers().map((l) => l.id), ...c.commits().map((x) => x.id)];
    for (const id of ids) {
      const target = join(scratch, `export-${id.slice(0, 16)}-${out.size}-${Math.random().toString(16).slice(2)}`);
      c.export(id, target);
      out.set(id, walkForCompare(target));
    }
  } finally {
    c.close();
  }
  return out;
}

/** The index rows that name content (id, kind, size), and every object read back (authenticated). */
export function readAllObjects(store: string): string[] {
  const s = Store.open(store, { readonly: true });
  try {
    // Every object but zstd dictionaries: a repack adds one (physical form, not content).
    const rows = s.db.prepare('SELECT id, kind, size FROM objects WHERE kind <> 6 ORDER BY id').all() as { id: Buffer; kind: number; size: number }[];
    for (const r of rows) assert.equal(s.objects.get(r.id, r.kind).length, r.size);
    return rows.map((r) => `${r.id.toString('hex')}:${r.kind}:${r.size}`);
  } finally {
    s.close();
  }
}

/** What a repack must keep: every state's tree and every object's bytes. */
export function contentOf(store: string, scratch: string): { trees: Map<string, WalkRecord[]>; objects: string[] } {
  return { trees: exportStates(store, scratch), objects: readAllObjects(store) };
}

/** Every object and every state's tree equal `before` (from contentOf). */
export function assertSameContent(store: string, scratch: string, before: { trees: Map<string, WalkRecord[]>; objects: string[] }): void {
  assert.deepEqual(readAllObjects(store), before.objects);
  assert.deepEqual(exportStates(store, scratch), before.trees);
}
