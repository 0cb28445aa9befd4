// Child process for the crash harness: performs one operation on a Store and prints progress
// markers; the parent kills it with SIGKILL at a random moment.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';

const [op, store, arg, name] = process.argv.slice(2) as [string, string, string, string];
const c = Client.connect(store);
process.stdout.write('ready\n');
switch (op) {
  case 'init':
    await c.initLayerStack({ name, source: arg });
    break;
  case 'commit': {
    // arg: a Workspace directory; write files then commit, over and over.
    for (let i = 0; ; i++) {
      writeFileSync(join(arg, `f${i % 50}.txt`), `round ${i}\n`.repeat(200 + i));
      await c.commitWorkspace(arg);
      process.stdout.write(`committed ${i}\n`);
    }
  }
  case 'fork':
    for (let i = 0; ; i++) {
      c.forkBranch({ name: `${name}-${i}`, layer: arg });
      process.stdout.write(`forked ${i}\n`);
    }
  case 'add':
    c.add(arg);
    break;
}
process.stdout.write('done\n');
c.close();
