/**
 * A push in small batches that says "batch N" after each, so the test can SIGKILL it mid-way.
 * argv: store, ref.
 */
import { Client } from '../../lib/sdk/index.js';

const [store, ref] = process.argv.slice(2) as [string, string];
const c = Client.connect(store);
await c.push(ref, { batchBytes: 4096, onBatch: (s) => process.stdout.write(`batch ${s.batches}\n`) });
process.stdout.write('done\n');
c.close();
