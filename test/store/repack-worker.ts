// Child process of the repack tests: repacks a Store in small transactions and prints one line
// per progress report, so the parent can SIGKILL it mid-repack or write meanwhile.
import { Store } from '../../lib/store/index.js';

const [store, batch, level, pauseMs = '0'] = process.argv.slice(2) as [string, string, string, string?];
// A pause after each transaction (the write lock is free then), so a parent's reads and writes
// interleave with many of them.
const pause = new Int32Array(new SharedArrayBuffer(4));
const s = Store.open(store);
process.stdout.write('ready\n');
const r = await s.repack({
  batchBytes: Number(batch),
  level: Number(level),
  onProgress: (p) => {
    process.stdout.write(`progress ${p.phase} ${p.rowsDone}/${p.rowsTotal}\n`);
    if (Number(pauseMs) > 0 && p.phase === 'rewrite') Atomics.wait(pause, 0, 0, Number(pauseMs));
  },
});
process.stdout.write(`done ${JSON.stringify(r)}\n`);
s.close();
