// Child process of the repack tests: repacks a Store in small transactions and prints one line
// per progress report, so the parent can SIGKILL it mid-repack or write meanwhile.
import { Store } from '../../lib/store/index.js';

const [store, batch, level] = process.argv.slice(2) as [string, string, string];
const s = Store.open(store);
process.stdout.write('ready\n');
const r = await s.repack({
  batchBytes: Number(batch),
  level: Number(level),
  onProgress: (p) => process.stdout.write(`progress ${p.phase} ${p.rowsDone}/${p.rowsTotal}\n`),
});
process.stdout.write(`done ${JSON.stringify(r)}\n`);
s.close();
