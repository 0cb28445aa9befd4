// `layerfs` as a command, as a user runs it: compiled JavaScript (bin/layerfs.js → dist/), Node
// start and module loading included. Rounds interleave every command (same minute, same load),
// and each --bin given (e.g. a build of an older commit) runs the same commands:
//   version  layerfs --version
//   small    layerfs cat STATE small.txt | cat > /dev/null        (1 KiB)
//   large    layerfs cat STATE large.bin | cat > /dev/null        (--mib MiB of random bytes)
// against git in the same rounds: `git --version`, `git cat-file -p HEAD:small.txt | cat`,
// `git cat-file -p HEAD:large.bin | cat` (loose objects), and `node -e 0` (the floor of any Node
// command). The Store is made by this checkout's SDK. Reported: median wall ms and median CPU ms
// (user + system of the whole pipeline, bash `times`) per command, and the CPU range.
//   node --import tsx bench/micro/cli-start.bench.ts [--rounds 10] [--mib 100] [--bin NAME=PATH/bin/layerfs.js]…
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { seededBytes } from '../../test/helpers/random.js';

const argv = process.argv.slice(2);
const arg = (name: string, dflt: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1]! : dflt);
const rounds = Number(arg('--rounds', '10'));
const mib = Number(arg('--mib', '100'));
const bins: [string, string][] = [['this', fileURLToPath(new URL('../../bin/layerfs.js', import.meta.url))]];
argv.forEach((a, i) => {
  if (a === '--bin') {
    const [name, file] = argv[i + 1]!.split('=') as [string, string];
    bins.push([name, path.resolve(file)]);
  }
});
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** A bash command line, timed with its children's CPU (`times` after it). */
function timedSh(cmd: string, env: NodeJS.ProcessEnv, cwd?: string): { ms: number; cpuMs: number } {
  const t = performance.now();
  const r = spawnSync('bash', ['-c', `${cmd}; times`], { env, cwd, encoding: 'utf8' });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  const lines = r.stdout.trim().split('\n');
  const sec = (s: string) =>
    s.split(/\s+/).reduce((a, x) => {
      const m = /(\d+)m([\d.]+)s/.exec(x);
      return m ? a + Number(m[1]) * 60 + Number(m[2]) : a;
    }, 0);
  return { ms, cpuMs: sec(lines[lines.length - 1]!) * 1000 };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-cli-start-'));
try {
  const tree = path.join(tmp, 'tree');
  fs.mkdirSync(tree);
  fs.writeFileSync(path.join(tree, 'small.txt'), 'layerfs\n'.repeat(128));
  const fd = fs.openSync(path.join(tree, 'large.bin'), 'w');
  for (let i = 0; i < mib; i++) fs.writeSync(fd, seededBytes(0xc11, 1048576, i));
  fs.closeSync(fd);
  const store = path.join(tmp, 's.layerfs');
  const c = Client.create(store);
  const layer = (await c.initLayerStack({ name: 'bench', source: tree })).layer.id;
  c.close();
  const env = { ...process.env, GIT_DIR: path.join(tmp, 'repo.git'), GIT_WORK_TREE: tree, GIT_CONFIG_NOSYSTEM: '1', HOME: tmp, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@b' };
  timedSh('git init -q && git add -A && git commit -q -m x', env, tree);

  const commands: [string, string][] = [['node -e 0', `${q(process.execPath)} -e 0`]];
  for (const [name, bin] of bins) {
    const lf = `${q(process.execPath)} ${q(bin)}`;
    commands.push([`${name}: --version`, `${lf} --version > /dev/null`]);
    commands.push([`${name}: cat small`, `${lf} --store ${q(store)} cat ${layer} small.txt | cat > /dev/null`]);
    commands.push([`${name}: cat large`, `${lf} --store ${q(store)} cat ${layer} large.bin | cat > /dev/null`]);
  }
  commands.push(['git --version', 'git --version > /dev/null']);
  commands.push(['git cat-file small', 'git cat-file -p HEAD:small.txt | cat > /dev/null']);
  commands.push(['git cat-file large', 'git cat-file -p HEAD:large.bin | cat > /dev/null']);

  const got = new Map<string, { ms: number[]; cpuMs: number[] }>(commands.map(([n]) => [n, { ms: [], cpuMs: [] }]));
  for (const [, cmd] of commands) timedSh(cmd, env, tree); // warm-up: page cache, disk cache of compiled code
  for (let r = 0; r < rounds; r++) {
    // Rotate the order each round so no command always runs right after the same one.
    const order = commands.map((_, i) => commands[(i + r) % commands.length]!);
    for (const [name, cmd] of order) {
      const t = timedSh(cmd, env, tree);
      got.get(name)!.ms.push(t.ms);
      got.get(name)!.cpuMs.push(t.cpuMs);
    }
  }
  const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  for (const [name, v] of got) console.log(JSON.stringify({ command: name, rounds, wallMs: Math.round(median(v.ms)), cpuMs: Math.round(median(v.cpuMs)), cpuRange: [Math.round(Math.min(...v.cpuMs)), Math.round(Math.max(...v.cpuMs))], load }));
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
