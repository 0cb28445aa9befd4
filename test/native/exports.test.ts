/**
 * The addon exports only its entry points (native/exports.ver). SQLite loads the addon as an
 * extension with RTLD_GLOBAL; were its bundled zstd global, the system libzstd loaded later for
 * dictionary training would call into it (another version) and train a different, worse
 * dictionary: a repack's result then depended on what the process had read before.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ADDON_PATH } from '../../lib/native/blobs.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const SEED = 11;
const child = fileURLToPath(new URL('./train-child.ts', import.meta.url));

test('the addon exports only the Node-API and SQLite extension entry points', () => {
  const out = execFileSync('nm', ['-D', '--defined-only', ADDON_PATH], { encoding: 'utf8' });
  const names = out.split('\n').filter(Boolean).map((l) => l.trim().split(/\s+/).pop()).sort();
  assert.deepEqual(names, ['napi_register_module_v1', 'node_api_module_get_api_version_v1', 'sqlite3_layerfsblobs_init']);
});

test(`a dictionary trained after SQLite loaded the addon as an extension is the one trained without (seed ${SEED})`, { timeout: 120_000 }, () => {
  const train = (mode: string) => execFileSync(process.execPath, nodeArgs(child, mode, String(SEED)), { encoding: 'utf8' });
  const plain = train('plain');
  assert.notEqual(plain, 'none', 'this machine has ZDICT (libzstd1, scripts/setup.sh)');
  assert.equal(train('extension'), plain);
});
