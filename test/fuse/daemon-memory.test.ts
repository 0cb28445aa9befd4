// The mount daemon's memory budget (lib/fuse/budget.ts): its peak resident set (VmHWM) stays at
// most 256 MiB through three cold reads of a 256 MiB file, an rsync of 3,000 files into the
// mount, a 512 MiB file written and the commit of all of it; quiet after the write, with nothing
// committed, it settles (quiet-settle.ts). Before the budget the same steps
// took the daemon to 540-1070 MiB (docs/BENCHMARKS.md, "The mount daemon's memory").
//
// The daemon runs as it ships: compiled JavaScript, started by the compiled client from a
// plain `node` (no TypeScript loader). Under tsx every thread of the daemon carries its own
// loader and source maps (80-100 MiB more), which the package never does. The sources are
// compiled here, file by file, with esbuild (what tsx uses), into a copy of the package layout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { commitFuse, daemonPaths, fuseAvailable } from '../../lib/fuse/index.js';
import { SETTLE_QUIET_MS } from '../../lib/fuse/budget.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { setupStore, withMount } from './helpers.js';

const BOUND_MIB = 256;
/**
 * The idle daemon's VmRSS after that commit, once it has settled: 160 MiB measured, 193 without
 * the collection and trim that follow a long commit (loop-turns.ts settle).
 */
const SETTLED_MIB = 176;
const skip =
  process.getuid?.() !== 0 ? 'needs root (kernel backend)' : !fuseAvailable().ok ? `FUSE is not usable here: ${fuseAvailable().reason}` : spawnSync('rsync', ['--version']).status !== 0 ? 'needs rsync' : false;
const repo = join(dirname(fileURLToPath(import.meta.url)), '../..');

function sourcesOf(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sourcesOf(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The package as it ships (lib compiled to JavaScript), its addon and dependencies linked. */
function compiledPackage(): string {
  const pkg = tempDir('layerfs-compiled-');
  buildSync({ entryPoints: sourcesOf(join(repo, 'lib')), outdir: join(pkg, 'lib'), outbase: join(repo, 'lib'), format: 'esm', platform: 'node', target: 'node20', logLevel: 'error' });
  writeFileSync(join(pkg, 'package.json'), readFileSync(join(repo, 'package.json')));
  symlinkSync(join(repo, 'build'), join(pkg, 'build'));
  symlinkSync(join(repo, 'node_modules'), join(pkg, 'node_modules'));
  return pkg;
}

interface Memory {
  rss: number;
  hwm: number;
}

function memoryOf(pid: number): Memory {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(s)![1]) / 1024;
  return { rss: mib('VmRSS'), hwm: mib('VmHWM') };
}

function coldRead(file: string): void {
  // The file's pages leave the page cache first (dd's nocache drops them), so every byte is a READ.
  execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
  execFileSync('dd', [`if=${file}`, 'of=/dev/null', 'bs=1M', 'status=none']);
}

test('the daemon stays within 256 MiB through cold reads, an rsync of many files and a large commit', { skip, timeout: 600_000 }, async () => {
  const pkg = compiledPackage();
  const s = await setupStore((src) => execFileSync('sh', ['-c', `head -c ${256 << 20} /dev/urandom > '${src}/a.bin'`]), 'layerfs-memory-');
  // Started by the compiled client from a plain node: the daemon runs without a loader.
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const start = `import { ensureDaemon } from ${JSON.stringify(join(pkg, 'lib/fuse/index.js'))}; console.log((await ensureDaemon(process.argv[1])).pid);`;
  const pid = Number(execFileSync(process.execPath, ['--input-type=module', '-e', start, s.storePath], { env, encoding: 'utf8' }).trim());
  assert.ok(pid > 0);
  assert.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), new RegExp(`${relative('/', pkg)}/lib/fuse/daemon-main\\.js`));
  const steps: Record<string, Memory> = {};
  const settles = () => readFileSync(daemonPaths(s.storePath).log, 'utf8').match(/quiet after a burst of requests: settled/g)?.length ?? 0;
  let settlesBefore = -1;
  let settlesAfter = -1;
  await withMount(s, async (m) => {
    assert.equal(m.daemonPid, pid);
    steps.mounted = memoryOf(pid);
    for (let i = 0; i < 3; i++) {
      coldRead(join(m.path, 'a.bin'));
      steps[`cold read ${i + 1}`] = memoryOf(pid);
    }
    // rsync of 3,000 files (16-60 KiB each, 110 MiB) into the mount: more than the in-memory spools may hold.
    const tree = join(s.dir, 'tree');
    for (let d = 0; d < 30; d++) {
      mkdirSync(join(tree, `d${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) {
        const size = 16384 + ((d * 100 + f) * 7919) % 45000;
        writeFileSync(join(tree, `d${d}`, `f${f}.bin`), Buffer.alloc(size, (d * 100 + f) & 0xff));
      }
    }
    // The cold reads are fewer requests than a burst (budget.ts SETTLE_BURST_REQUESTS): no settle yet.
    settlesBefore = settles();
    execFileSync('rsync', ['-a', `${tree}/`, join(m.path, 'tree')]);
    steps.rsync = memoryOf(pid);
    execFileSync('dd', ['if=/dev/urandom', `of=${join(m.path, 'b.bin')}`, 'bs=1M', 'count=512', 'status=none']);
    steps['512 MiB written'] = memoryOf(pid);
    // Quiet after a burst of requests, nothing committed: the serving thread settles too (quiet-settle.ts).
    await new Promise((r) => setTimeout(r, SETTLE_QUIET_MS + 2000));
    steps.quiet = memoryOf(pid);
    settlesAfter = settles();
    const c = await commitFuse(s.storePath, m.workspaceId);
    assert.equal(c.outcome, 'Created');
    steps.committed = memoryOf(pid);
    // A long commit is followed by a full collection and a trim (loop-turns.ts settle): what it
    // left goes back to the system, where the idle daemon kept it before.
    for (let i = 0; i < 50 && memoryOf(pid).rss > SETTLED_MIB; i++) await new Promise((r) => setTimeout(r, 100));
    steps.settled = memoryOf(pid);
  });
  assertIntact(s.client);
  s.client.close();
  const shown = Object.entries(steps).map(([k, v]) => `${k}: VmRSS ${v.rss.toFixed(0)} MiB, VmHWM ${v.hwm.toFixed(0)} MiB`).join('; ');
  console.log(shown);
  assert.equal(settlesBefore, 0, `the daemon settled ${settlesBefore} times after the cold reads alone (daemon.log)`);
  assert.ok(settlesAfter >= 1, 'the daemon did not settle after the rsync, the write and a quiet spell (daemon.log)');
  assert.ok(steps.quiet!.rss <= steps['512 MiB written']!.rss, `the quiet daemon's VmRSS grew: ${shown}`);
  assert.ok(steps.settled!.rss <= SETTLED_MIB, `the daemon's VmRSS 5 s after the commit is ${steps.settled!.rss.toFixed(1)} MiB (bound ${SETTLED_MIB}): ${shown}`);
  for (const [k, v] of Object.entries(steps)) assert.ok(v.hwm <= BOUND_MIB, `the daemon's VmHWM after "${k}" is ${v.hwm.toFixed(1)} MiB (bound ${BOUND_MIB}): ${shown}`);
});
