// Child process of the gc tests: runs `db gc` in small transactions and prints one line per
// progress report, so the parent can SIGKILL it at a seeded point; with `loop` it runs gc again
// and again (printing `round N`) until the file named by its last argument exists; with
// `kill:PHASE:N` it SIGKILLs itself at its Nth progress report of PHASE (a seeded point between
// two transactions).
import { existsSync } from 'node:fs';
import { Client } from '../../lib/sdk/index.js';

const [store, batch, mode = 'once', stopFile = ''] = process.argv.slice(2) as [string, string, string?, string?];
let selfKill = mode.startsWith('kill:') ? Number(mode.split(':')[2]) : -1;
const c = Client.connect(store);
process.stdout.write('ready\n');
for (let round = 1; ; round++) {
  const r = await c.gc({
    batchObjects: Number(batch),
    onProgress: (p) => {
      process.stdout.write(`progress ${p.phase} ${p.done}/${p.total} tx ${p.transactions}\n`);
      if (mode.startsWith('kill:') && mode.split(':')[1] === p.phase && --selfKill === 0) process.kill(process.pid, 'SIGKILL');
    },
  });
  process.stdout.write(`round ${round} ${r.deletedObjects} ${r.rescued}\n`);
  if (mode !== 'loop' || existsSync(stopFile)) break;
  await new Promise((res) => setTimeout(res, 20));
}
process.stdout.write('done\n');
c.close();
