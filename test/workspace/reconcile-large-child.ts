// Child process of the large-file reconcile test: reconciles Branch `ws`'s state with Branch
// `head`'s (both forked from one Layer, each with one edit of a large file) in a write
// transaction it rolls back, and prints the outcome and how far the resident set rose above
// what it was once the Store was open (peak, from VmHWM after resetting it).
import { readFileSync, writeFileSync } from 'node:fs';
import { branchRoot, getLayer, reconcileStates, resolveBranch } from '../../lib/history/index.js';
import { Store } from '../../lib/store/index.js';

const [path] = process.argv.slice(2) as [string];
const kib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const store = Store.open(path);
const head = resolveBranch(store, 'head');
const ws = resolveBranch(store, 'ws');
const base = getLayer(store, head.baseLayerId)!.rootId;
// Resets the peak resident set to the current one (Linux clear_refs "5").
writeFileSync('/proc/self/clear_refs', '5');
const before = kib('VmRSS');
const t = performance.now();
let out = {};
try {
  store.writeSync((w) => {
    const r = reconcileStates(store, w, base, branchRoot(store, head), branchRoot(store, ws));
    out = { outcome: r.outcome, merged: r.outcome === 'Merged' ? r.merged : undefined, riseMiB: (kib('VmHWM') - before) / 1024, ms: performance.now() - t };
    throw new Error('roll back');
  });
} catch (e) {
  if ((e as Error).message !== 'roll back') throw e;
}
process.stdout.write(`${JSON.stringify(out)}\n`);
store.close();
