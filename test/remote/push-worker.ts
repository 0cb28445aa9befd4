/**
 * One pusher of the concurrent-push test: commits its own file on Branch `shared` of its own
 * Store, says "ready", waits for the go file, pushes, and prints the outcome as one JSON line.
 * argv: store, workspace dir, file name, go file, and "strict" for a strict push.
 */
import { existsSync } from 'node:fs';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { commitFiles } from './fixture.js';

const [store, at, file, go, mode] = process.argv.slice(2) as [string, string, string, string, string | undefined];
const c = Client.connect(store);
await commitFiles(c, 'shared', at, { [file]: `${file}\n` });
process.stdout.write('ready\n');
while (!existsSync(go)) await new Promise((r) => setTimeout(r, 2));
try {
  const r = await c.push('shared', { strict: mode === 'strict' });
  process.stdout.write(JSON.stringify({ outcome: r.outcome, head: r.head, attempts: r.reconciled?.attempts ?? 0 }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ error: isLayerFsError(e) ? e.code : String(e) }) + '\n');
} finally {
  c.close();
}
