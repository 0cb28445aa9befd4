// A process that runs one tool call and is killed by the test at a chosen moment. argv: store,
// branch, mode ('commit': write many files and keep them, announcing "committing" first;
// 'hold': write a file and wait forever inside the call).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';

const [store, branch, mode, projection] = process.argv.slice(2) as [string, string, string, 'materialize' | 'fuse'];
const client = Client.connect(store);
await client.toolCall(
  branch,
  async (ws) => {
    if (mode === 'hold') {
      writeFileSync(join(ws.path, 'held.txt'), 'held\n');
      process.stdout.write(`holding ${ws.id}\n`);
      // A pending timer keeps the process alive (a bare pending promise would let it exit).
      await new Promise(() => setInterval(() => {}, 60_000));
    }
    for (let i = 0; i < 4000; i++) writeFileSync(join(ws.path, `f${i}.txt`), `file ${i} `.repeat(200 + (i % 50)));
    process.stdout.write(`committing ${ws.id}\n`);
    return { keep: true, message: 'many files' };
  },
  { projection },
);
process.stdout.write('done\n');
client.close();
