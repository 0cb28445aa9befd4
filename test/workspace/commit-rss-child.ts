// Child process of the commit memory test: commits the one Workspace of the Store and prints
// the outcome with the peak resident set (VmHWM) of the commit, reset once the Store was open.
import { readFileSync, writeFileSync } from 'node:fs';
import { Client } from '../../lib/sdk/index.js';

const [path] = process.argv.slice(2) as [string];
const kib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const c = Client.connect(path);
const ws = c.workspaces()[0]!;
// Resets the peak resident set to the current one (Linux clear_refs "5"): loading the code does not count.
writeFileSync('/proc/self/clear_refs', '5');
const before = kib('VmRSS');
const t = performance.now();
const r = await c.commitWorkspace(ws.id, { message: 'next' });
const out = { outcome: r.outcome, objectsInserted: r.objectsInserted, peakMiB: kib('VmHWM') / 1024, riseMiB: (kib('VmHWM') - before) / 1024, ms: performance.now() - t };
c.close();
process.stdout.write(`${JSON.stringify(out)}\n`);
