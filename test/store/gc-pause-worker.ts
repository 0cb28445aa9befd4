// Child process of gc-reuse.test.ts and maintenance-lease.test.ts: runs `db gc` one object per
// transaction and, after the first sweep transaction that deleted one of the objects named (hex,
// comma-separated; `-`: as the sweep starts), prints `paused` and waits between two
// transactions, holding no write lock, until the flag file exists.
import { existsSync } from 'node:fs';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';

const [path, watched, flag] = process.argv.slice(2) as [string, string, string];
const ids = watched === '-' ? [] : watched.split(',').map((h) => Buffer.from(h, 'hex'));
const c = Client.connect(path);
const s = Store.open(path, { readonly: true });
const stored = s.db.prepare('SELECT 1 FROM objects WHERE id = ?');
const nap = new Int32Array(new SharedArrayBuffer(4));
let paused = false;
const r = await c.gc({
  batchObjects: 1,
  onProgress: (p) => {
    if (paused || p.phase !== 'sweep' || (ids.length > 0 && ids.every((id) => stored.get(id) !== undefined))) return;
    paused = true;
    process.stdout.write('paused\n');
    while (!existsSync(flag)) Atomics.wait(nap, 0, 0, 20);
  },
});
process.stdout.write(`${JSON.stringify({ paused, deleted: r.deletedObjects, rescued: r.rescued })}\n`);
s.close();
c.close();
