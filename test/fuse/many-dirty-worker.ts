// Child process of many-dirty.test.ts, started under `prlimit --nofile=N`: the daemon it starts
// inherits the limit. Writes more dirty files into a FUSE Workspace than the daemon may open,
// commits them, and prints one JSON line with what it saw.
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { daemonPaths } from '../../lib/fuse/index.js';

const [store, at, countArg] = process.argv.slice(2) as [string, string, string];
const count = Number(countArg);
const c = Client.connect(store);
try {
  const ws = await c.createWorkspace('main', { at, projection: 'fuse' });
  const status = await c.daemonStatus();
  const limits = readFileSync(`/proc/${status!.pid}/limits`, 'utf8');
  const nofile = Number(/Max open files\s+(\d+)/.exec(limits)![1]);
  for (let d = 0; d < count / 100; d++) {
    mkdirSync(join(at, `d${d}`));
    for (let i = 0; i < 100; i++) writeFileSync(join(at, `d${d}`, `f${i}.txt`), `file ${d}/${i}\n`.repeat(200));
  }
  const reread = readFileSync(join(at, 'd3', 'f7.txt'), 'utf8') === 'file 3/7\n'.repeat(200);
  const spools = join(daemonPaths(store).spool, ws.id);
  const files = () => readdirSync(spools, { recursive: true }).length;
  const spooled = files();
  const r = await c.commitWorkspace(ws.id, { message: `${count} files` });
  // The committed files' spools are removed off the serving thread, soon after the commit.
  let left = files();
  for (let i = 0; i < 100 && left >= 400; i++) {
    await new Promise((res) => setTimeout(res, 100));
    left = files();
  }
  const fds = Number(readFileSync(`/proc/${status!.pid}/status`, 'utf8').match(/^FDSize:\s+(\d+)/m)?.[1] ?? -1);
  const end = await c.endWorkspace(ws.id);
  await c.stopDaemon();
  process.stdout.write(JSON.stringify({ nofile, reread, spooled, left, outcome: r.outcome, changedPaths: r.outcome === 'Created' ? r.changedPaths : 0, end: end.outcome, fds }) + '\n');
} finally {
  c.close();
}
