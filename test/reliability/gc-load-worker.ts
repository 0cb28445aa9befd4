// One of the processes working on a Store while `db gc` runs again and again (gc-concurrency
// test). Roles: `commit` commits content from a shared pool (so it reuses objects that `churn`'s
// deleted Branches left as garbage) and prints every Commit with its tree; `churn` forks a
// Branch, commits pool content, and deletes the Branch; `import` imports directories of pool
// content as new LayerStacks and prints every Layer with its tree; `read` reads the `main`
// LayerStack and the `keep` Branch over and over and checks the bytes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { walkForCompare } from '../helpers/treewalk.js';
import { pool } from './gc-pool.js';

const [store, role, dir, rounds] = process.argv.slice(2) as [string, string, string, string];
const c = Client.connect(store);
const published: { id: string; tree: ReturnType<typeof walkForCompare> }[] = [];
const errors: string[] = [];
const n = Number(rounds);
const guard = async (fn: () => Promise<void> | void) => {
  try {
    await fn();
  } catch (e) {
    errors.push(`${(e as { code?: string }).code ?? 'untyped'}: ${(e as Error).message}`);
  }
};
if (role === 'commit') {
  const ws = join(dir, 'ws-commit');
  await c.createWorkspace('keep', { at: ws });
  for (let i = 0; i < n; i++) {
    await guard(async () => {
      writeFileSync(join(ws, `r${i}.bin`), pool((i * 3) % 12));
      writeFileSync(join(ws, `t${i % 4}.txt`), pool(12 + (i % 6)));
      const tree = walkForCompare(ws);
      const r = await c.commitWorkspace(ws);
      if (r.outcome !== 'Created') throw new Error(`commit ${r.outcome}`);
      published.push({ id: r.commit.id, tree });
    });
  }
  await c.endWorkspace(ws);
} else if (role === 'churn') {
  for (let i = 0; i < n; i++) {
    await guard(async () => {
      const name = `churn-${i}`;
      c.forkBranch({ name, layer: 'main' });
      const ws = join(dir, `ws-${name}`);
      await c.createWorkspace(name, { at: ws });
      writeFileSync(join(ws, 'a.bin'), pool(i % 12));
      writeFileSync(join(ws, 'b.bin'), pool((i + 7) % 12));
      writeFileSync(join(ws, 'c.txt'), pool(12 + (i % 6)));
      if ((await c.commitWorkspace(ws)).outcome !== 'Created') throw new Error('churn commit');
      const r = await c.deleteBranch(name, { force: true });
      if (r.outcome !== 'Deleted') throw new Error(`churn delete ${r.outcome}`);
    });
  }
} else if (role === 'import') {
  for (let i = 0; i < n; i++) {
    await guard(async () => {
      const src = join(dir, `src-${i}`);
      mkdirSync(join(src, 'd'), { recursive: true });
      writeFileSync(join(src, 'x.bin'), pool((i * 5) % 12));
      writeFileSync(join(src, 'd', 'y.txt'), pool(12 + ((i + 1) % 6)));
      writeFileSync(join(src, 'own.txt'), `import ${i}\n`);
      const tree = walkForCompare(src);
      const r = await c.initLayerStack({ name: `imp-${i}`, source: src });
      published.push({ id: r.layer.id, tree });
    });
  }
} else {
  for (let i = 0; i < n; i++) {
    await guard(() => {
      for (let k = 0; k < 12; k++) if (!c.cat('main', `p${k}.bin`).equals(pool(k))) throw new Error(`main p${k}.bin differs`);
      for (const e of c.ls('keep')) if (e.kind === 'file' && e.name.endsWith('.bin')) c.cat('keep', e.name);
    });
  }
}
process.stdout.write(JSON.stringify({ published, errors }) + '\n');
c.close();
