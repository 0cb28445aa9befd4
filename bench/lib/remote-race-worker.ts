// One pusher of the remote race (bench/lib/remote-race.ts): commits its own file on Branch
// BRANCH of its own Store, prints "ready", waits for the go file, pushes (strict or not) and
// prints the outcome as one JSON line. argv: store, workspace dir, file, go file, branch, mode.

import fs from 'node:fs';
import path from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';

const [store, at, file, go, branch, mode] = process.argv.slice(2) as [string, string, string, string, string, string];
const c = Client.connect(store);
const ws = await c.createWorkspace(branch, { at, projection: 'materialize' });
fs.writeFileSync(path.join(at, file), `${file}\n`);
const r = await c.commitWorkspace(ws.id);
await c.endWorkspace(ws.id);
if (r.outcome !== 'Created') throw new Error(`commit: ${r.outcome}`);
process.stdout.write('ready\n');
while (!fs.existsSync(go)) await new Promise((res) => setTimeout(res, 2));
try {
  const p = await c.push(branch, { strict: mode === 'strict' });
  process.stdout.write(JSON.stringify({ outcome: p.outcome, attempts: p.reconciled?.attempts ?? 0 }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ error: isLayerFsError(e) ? (e as { code: string }).code : String(e) }) + '\n');
} finally {
  c.close();
}
