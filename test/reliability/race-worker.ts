// One of several processes racing on one Store, driven line by line over stdin so the parent
// can hold them all at a barrier and release them together:
//   add:    "prepare R" → fork a Branch from the LayerStack head, commit one file, answer
//           "ready R"; "go R" → Add with expectedHead = that head, answer the outcome as JSON.
//   create: "go 0" → `layerfs --json db create PATH` in this process; answer its output.
import { createInterface } from 'node:readline';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { main } from '../../lib/cli/main.js';

const [mode, store, id, wsRoot] = process.argv.slice(2) as [string, string, string, string];
const send = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n');
const typed = (e: unknown) => ({ code: (e as { code?: string }).code ?? 'untyped', message: (e as Error).message });

let c: Client | undefined;
let prepared: { branch: string; head: string; ws: string } | undefined;
send({ ready: -1 });
for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, arg] = line.split(' ') as [string, string];
  const round = Number(arg);
  if (cmd === 'exit') break;
  try {
    if (mode === 'create' && cmd === 'go') {
      // Capture what the CLI prints: its JSON result or error.
      let out = '';
      const write = process.stdout.write.bind(process.stdout);
      process.stdout.write = ((chunk: string | Uint8Array) => ((out += chunk.toString()), true)) as typeof process.stdout.write;
      try {
        await main([process.execPath, 'layerfs', '--json', 'db', 'create', store]);
      } finally {
        process.stdout.write = write;
      }
      send({ round, cli: JSON.parse(out), exitCode: process.exitCode ?? 0 });
      process.exitCode = 0;
    } else if (mode === 'add' && cmd === 'prepare') {
      c ??= Client.connect(store);
      const head = c.layerStacks().find((s) => s.name === 'p')!.headLayerId;
      const branch = c.forkBranch({ name: `w${id}-r${round}`, layer: head });
      const ws = await c.createWorkspace(branch.id, { at: join(wsRoot, `w${id}-r${round}`) });
      writeFileSync(join(ws.path, `w${id}.txt`), `worker ${id} round ${round}\n`);
      const r = await c.commitWorkspace(ws.id);
      if (r.outcome !== 'Created') throw new Error(`commit ${r.outcome}`);
      prepared = { branch: branch.id, head, ws: ws.id };
      send({ ready: round });
    } else if (mode === 'add' && cmd === 'go') {
      const p = prepared!;
      const r = c!.add(p.branch, { expectedHead: p.head });
      send({ round, worker: id, branch: p.branch, outcome: r.outcome, layer: r.outcome === 'Added' ? r.layer.id : null });
      await c!.endWorkspace(p.ws, { discard: true });
    }
  } catch (e) {
    send({ round, error: typed(e) });
  }
}
c?.close();
