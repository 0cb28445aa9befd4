/**
 * Child of exports.test.ts: trains a dictionary on seeded samples and prints its sha1; with
 * `extension` it first has SQLite load the addon as an extension (dlopen RTLD_GLOBAL), the way
 * a Store's connection does before it reads pack rows.
 */
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { ADDON_PATH, BLOB_ENTRY } from '../../lib/native/blobs.js';
import { zstdTrainDictionary } from '../../lib/native/index.js';
import { trainingSamples } from './helpers.js';

if (process.argv[2] === 'extension') {
  const db = new Database(':memory:');
  (db as unknown as { loadExtension(file: string, entryPoint: string): void }).loadExtension(ADDON_PATH, BLOB_ENTRY);
}
const { data, sizes } = trainingSamples(Number(process.argv[3]));
const dict = zstdTrainDictionary(data, sizes, 32 * 1024, 1000);
process.stdout.write(dict ? createHash('sha1').update(dict).digest('hex') : 'none');
