// `layerfs cat` writes stdout from the addon's output thread: the bytes are exact to a file, a
// pipe and a socket; a damaged Store ends the output before the damaged chunk's bytes (nothing
// unverified is written) and exits 1 with ERR_CORRUPT.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { chunkAndHash } from '../../lib/native/index.js';
import { Reader } from '../../lib/sdk/reader.js';
import { cli, cliArgv } from '../helpers/cli.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

const SEED = 23;

/** Compressible text of `n` bytes (stored as zstd frames). */
function text(n: number): Buffer {
  const lines: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < n; i++) {
    const l = `export const value${i} = compute(${(i * 7919) % 10007}, 'line ${i}');\n`;
    lines.push(l);
    bytes += l.length;
  }
  return Buffer.from(lines.join('')).subarray(0, n);
}

function setup() {
  const dir = tempDir();
  const store = join(dir, 'store.sqlite');
  const env = { LAYERFS_STORE: store, LAYERFS_CONTEXT: join(dir, 'ctx.json') };
  mkdirSync(join(dir, 'src'));
  const files = { 'random.bin': seededBytes(SEED, 6 * 1024 * 1024 + 17), 'text.js': text(5 * 1024 * 1024 + 3), 'small.txt': Buffer.from('small\n') };
  for (const [name, data] of Object.entries(files)) writeFileSync(join(dir, 'src', name), data);
  assert.equal(cli(['db', 'create', store], env).code, 0);
  assert.equal(cli(['layerstack', 'init', '--name', 'demo', join(dir, 'src')], env).code, 0);
  return { dir, store, env, files };
}

/** Runs `layerfs ARGS` in bash with `redirect` after it; returns the exit status and stderr. */
function sh(env: Record<string, string>, args: string, redirect: string): { code: number; stderr: string } {
  const cmd = cliArgv([]).map((a) => `'${a}'`).join(' ');
  const r = spawnSync('bash', ['-c', `set -o pipefail; ${JSON.stringify(process.execPath)} ${cmd} ${args} ${redirect}`], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return { code: r.status ?? -1, stderr: r.stderr };
}

test(`cat is exact to a file, a pipe and a socket, whole and ranges (seed ${SEED})`, () => {
  const { dir, store, env, files } = setup();
  const out = join(dir, 'out');
  for (const [name, data] of Object.entries(files)) {
    assert.equal(sh(env, `cat demo ${name}`, `> '${out}'`).code, 0);
    assert.ok(readFileSync(out).equals(data), `${name} to a file`);
    assert.equal(sh(env, `cat demo ${name}`, `| cat > '${out}'`).code, 0);
    assert.ok(readFileSync(out).equals(data), `${name} through a pipe`);
    // spawnSync's stdout is a socket.
    const r = spawnSync(process.execPath, cliArgv(['cat', 'demo', name]), { env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 });
    assert.equal(r.status, 0);
    assert.ok(r.stdout.equals(data), `${name} to a socket`);
    for (const [offset, length] of [[0, 1], [1_000_003, 2_500_000], [data.length - 5, 100], [data.length + 1, 10]] as const) {
      assert.equal(sh(env, `cat --offset ${offset} --length ${length} demo ${name}`, `> '${out}'`).code, 0);
      assert.ok(readFileSync(out).equals(data.subarray(offset, offset + length)), `${name} ${offset}+${length}`);
    }
  }
  assertStoreIntact(store);
});

test(`a damaged chunk ends cat's output before its bytes: exit 1, ERR_CORRUPT, only verified bytes written (seed ${SEED})`, () => {
  const { dir, store, env, files } = setup();
  for (const name of ['random.bin', 'text.js'] as const) {
    const data = files[name];
    const chunks = chunkAndHash(data);
    const m = chunks.length >> 1;
    const before = chunks.slice(0, m).reduce((a, c) => a + c.length, 0);
    const db = new Database(store);
    try {
      const loc = db.prepare('SELECT codec, pack, offset, length FROM objects WHERE id = ?').get(chunks[m]!.id) as { codec: number; pack: number; offset: number; length: number };
      assert.equal(loc.codec, name === 'random.bin' ? 0 : 1, 'random content is stored raw, text as zstd');
      const row = Buffer.from(db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(loc.pack) as Buffer);
      row[loc.offset + (loc.length >> 1)]! ^= 0x10;
      db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(row, loc.pack);
    } finally {
      db.close();
    }
    const out = join(dir, `out-${name}`);
    for (const redirect of [`> '${out}'`, `| cat > '${out}'`]) {
      const r = sh(env, `cat demo ${name}`, redirect);
      assert.equal(r.code, 1, `${name} ${redirect}: ${r.stderr}`);
      assert.match(r.stderr, /\[ERR_CORRUPT\]/);
      const got = readFileSync(out);
      assert.ok(got.length <= before, `${name}: ${got.length} bytes written, the damaged chunk starts at ${before}`);
      assert.ok(got.equals(data.subarray(0, got.length)), `${name}: what was written is the file's start`);
    }
    // The SDK's writeFileTo: the same, thrown.
    const fd = openSync(out, 'w');
    const reader = Reader.open(store);
    try {
      assert.throws(() => reader.writeFileTo(fd, 'demo', name), { code: 'ERR_CORRUPT' });
    } finally {
      reader.close();
      closeSync(fd);
    }
    const got = readFileSync(out);
    assert.ok(got.length <= before && got.equals(data.subarray(0, got.length)));
  }
  // The undamaged file is still read whole.
  const r = spawnSync(process.execPath, cliArgv(['cat', 'demo', 'small.txt']), { env: { ...process.env, ...env }, encoding: 'utf8' });
  assert.equal(r.stdout, 'small\n');
});
