/**
 * The first large import of a Store trains its zstd dictionary partway and compresses all of its
 * small content with it, the files it held back before training included; the same tree trains
 * the same dictionary; a small import samples nothing and trains none; a SIGKILL at any moment of
 * such an import leaves a Store that verifies, without the LayerStack or with all of it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { Codec, ObjectKind } from '../../lib/store/index.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { rng } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const WORDS = 'import export const function return await module layer store commit value index'.split(' ');

/** `files` text files of 300–6,300 bytes in 20 directories, seeded. */
function textTree(root: string, files: number, seed = 1): void {
  const r = rng(seed);
  for (let i = 0; i < files; i++) {
    const dir = join(root, `pkg${i % 20}`);
    if (i < 20) mkdirSync(dir, { recursive: true });
    const n = 300 + Math.floor(r() * 6000);
    let s = `// file ${i}\n`;
    while (s.length < n) s += `${WORDS[Math.floor(r() * WORDS.length)]}${r() < 0.1 ? `${Math.floor(r() * 1000)}\n` : ' '}`;
    writeFileSync(join(dir, `f${i}.js`), s.slice(0, n));
  }
}

function dictionaryOf(path: string): { dict: string | undefined; codecs: Map<number, number> } {
  const db = new Database(path, { readonly: true });
  try {
    const dict = db.prepare("SELECT value FROM meta WHERE key = 'dictionary'").pluck().get() as string | undefined;
    const rows = db.prepare('SELECT codec, count(*) AS n FROM objects WHERE kind = ? GROUP BY codec').all(ObjectKind.Blob) as { codec: number; n: number }[];
    return { dict, codecs: new Map(rows.map((r) => [r.codec, r.n])) };
  } finally {
    db.close();
  }
}

test('a large first import trains the dictionary partway and stores all its small files with it, deterministically', { timeout: 300_000 }, async () => {
  const dir = tempDir('layerfs-dimport-');
  textTree(join(dir, 'src'), 4500);
  const dicts: string[] = [];
  for (const name of ['a', 'b']) {
    const path = join(dir, `${name}.layerfs`);
    const c = Client.create(path);
    await c.initLayerStack({ name: 'r', source: join(dir, 'src') });
    // Every file reads back, the first ones (held back before training) included.
    for (const i of [0, 1, 2, 777, 4499]) assert.ok(c.cat('r', `pkg${i % 20}/f${i}.js`).equals(readFileSync(join(dir, 'src', `pkg${i % 20}`, `f${i}.js`))));
    assertIntact(c);
    c.close();
    const { dict, codecs } = dictionaryOf(path);
    assert.ok(dict, 'the import trained a dictionary');
    dicts.push(dict);
    assert.equal(codecs.get(Codec.Zstd) ?? 0, 0, `no small file compressed without the dictionary: ${JSON.stringify([...codecs])}`);
    assert.equal(codecs.get(Codec.Dict), 4500);
  }
  assert.equal(dicts[0], dicts[1], 'the same tree trains the same dictionary');
});

test('large files written while an import holds back are stored with the dictionary too; repeated chunks are stored once', { timeout: 300_000 }, async () => {
  const dir = tempDir('layerfs-dchunks-');
  const src = join(dir, 'src');
  textTree(src, 4200, 3);
  const big = Buffer.concat(Array.from({ length: 12 }, (_, i) => readFileSync(join(src, `pkg${i % 20}`, `f${i}.js`))));
  const large = Buffer.concat([big, big, big, big, big, big]);
  mkdirSync(join(src, 'a-bundles'));
  writeFileSync(join(src, 'a-bundles', 'one.js'), large);
  writeFileSync(join(src, 'a-bundles', 'two.js'), large);
  const path = join(dir, 's.layerfs');
  const c = Client.create(path);
  await c.initLayerStack({ name: 'r', source: src });
  for (const f of ['one.js', 'two.js']) assert.ok(c.cat('r', `a-bundles/${f}`).equals(large));
  assertIntact(c);
  c.close();
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare('SELECT codec, count(*) AS n FROM objects WHERE kind = ? GROUP BY codec').all(ObjectKind.Chunk) as { codec: number; n: number }[];
    assert.ok(rows.length > 0);
    assert.deepEqual(rows.map((r) => r.codec), [Codec.Dict], `chunk codecs ${JSON.stringify(rows)}`);
  } finally {
    db.close();
  }
});

test('an import too small to train a dictionary samples nothing and stores none', { timeout: 120_000 }, async () => {
  const dir = tempDir('layerfs-dsmall-');
  textTree(join(dir, 'src'), 1500);
  const path = join(dir, 's.layerfs');
  const c = Client.create(path);
  await c.initLayerStack({ name: 'r', source: join(dir, 'src') });
  c.close();
  const { dict, codecs } = dictionaryOf(path);
  assert.equal(dict, undefined);
  assert.equal(codecs.get(Codec.Zstd), 1500);
  assertStoreIntact(path);
});

const worker = fileURLToPath(new URL('../reliability/crash-worker.ts', import.meta.url));

/** Runs the crash worker's `init` and SIGKILLs it `ms` after it is ready; its output. */
function importAndKill(store: string, src: string, name: string, ms: number): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, nodeArgs(worker, 'init', store, src, name), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!timer && out.includes('ready')) timer = setTimeout(() => child.kill('SIGKILL'), ms);
    });
    child.stderr.on('data', () => {});
    child.on('exit', () => {
      if (timer) clearTimeout(timer);
      resolve(out);
    });
  });
}

test('SIGKILL while an import holds content back or trains: the Store verifies, the LayerStack is whole or absent', { timeout: 600_000 }, async () => {
  const dir = tempDir('layerfs-dkill-');
  const src = join(dir, 'src');
  textTree(src, 4500);
  const store = join(dir, 's.layerfs');
  Client.create(store).close();
  const seed = Number(process.env.LAYERFS_CRASH_SEED ?? 19);
  console.log(`seed ${seed}`);
  const r = rng(seed);
  for (let i = 0; i < 4; i++) {
    const out = await importAndKill(store, src, `t${i}`, Math.floor(r() * 4000));
    const c = Client.connect(store);
    assertIntact(c);
    const exists = c.layerStacks().some((s) => s.name === `t${i}`);
    if (out.includes('done')) assert.ok(exists);
    if (exists) assert.equal(c.ls(`t${i}`, 'pkg7').length, 225);
    c.close();
  }
  const c = Client.connect(store);
  await c.initLayerStack({ name: 'after', source: src });
  assert.equal(c.ls('after', 'pkg7').length, 225);
  assertIntact(c);
  c.close();
});
