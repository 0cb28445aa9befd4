// One of several processes committing to the same Branch through its own Workspaces.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';

const [store, branch, wsRoot, id, count, mode] = process.argv.slice(2) as [string, string, string, string, string, string | undefined];
const strict = mode === 'strict';
const c = Client.connect(store);
const created: string[] = [];
let headMoved = 0;
let reconciled = 0;
const errors: string[] = [];
let gen = 0;
let ws = await c.createWorkspace(branch, { at: join(wsRoot, `${id}-${gen}`) });
for (let i = 0; i < Number(count); i++) {
  try {
    writeFileSync(join(ws.path, `w${id}.txt`), `worker ${id} attempt ${i}\n`);
    const r = await c.commitWorkspace(ws.id, { strict });
    if (r.outcome === 'Created') {
      created.push(r.commit.id);
      if (r.reconciled) reconciled++;
    }
    else if (r.outcome === 'HeadMoved') {
      headMoved++;
      await c.endWorkspace(ws.id, { discard: true });
      ws = await c.createWorkspace(branch, { at: join(wsRoot, `${id}-${++gen}`) });
    } else errors.push(`unexpected ${r.outcome}`);
  } catch (e) {
    errors.push(`${(e as { code?: string }).code ?? 'untyped'}: ${(e as Error).message}`);
  }
}
process.stdout.write(JSON.stringify({ created, headMoved, reconciled, errors }) + '\n');
c.close();
