// One timed operation of the real-tree A/B (bench/micro/real-tree-ab.sh), in its own process, on
// the SDK of the checkout ROOT (its lib/ run by tsx), so two checkouts compare on one Store:
//   import  Client.create + initLayerStack(DIR) + branch `main`      create  createWorkspace('main', materialize) at DIR
//   export  export('main') into DIR                                   end     endWorkspace of the Workspace at DIR
//   node --import tsx bench/micro/real-tree-op.ts ROOT STORE OP DIR  → {"op","ms","cpuMs"}
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client as ClientClass } from '../../lib/sdk/index.js';

const [root, store, op, dir] = process.argv.slice(2);
if (!root || !store || !op || !dir) throw new Error('usage: real-tree-op.ts ROOT STORE import|create|export|end DIR');
const { Client } = (await import(path.join(path.resolve(root), 'lib/sdk/index.ts'))) as { Client: typeof ClientClass };
const c = op === 'import' ? Client.create(store) : Client.connect(store);
const t = performance.now();
const cpu = process.cpuUsage();
if (op === 'import') {
  const r = await c.initLayerStack({ name: 'real', source: dir });
  c.forkBranch({ name: 'main', layer: r.layer.id });
} else if (op === 'create') await c.createWorkspace('main', { at: dir, projection: 'materialize' });
else if (op === 'export') c.export('main', dir);
else if (op === 'end') {
  for (const w of c.workspaces()) if (w.path === path.resolve(dir)) await c.endWorkspace(w.id);
} else throw new Error(`unknown op ${op}`);
const d = process.cpuUsage(cpu);
const ms = performance.now() - t;
c.close();
console.log(JSON.stringify({ op, ms: Math.round(ms), cpuMs: Math.round((d.user + d.system) / 1000) }));
