// `layerfs cat` of a file at the end of the longest delta chain its history made, against `cat`
// of a file of the same size stored whole, as a user runs them (compiled bin, Node start
// included), with `git cat-file` of both in the same rounds. The history: 60 tool calls, each a
// small edit of one 20.7 kB source file in a materialized Workspace, committed (the commit writes
// the new version as a delta against the previous one; writers bound chains at DELTA_MAX_DEPTH).
// The file at the end of the deepest chain is read from the Commit that wrote it; the whole
// file sits beside it from the first state on. With --repack the Store is repacked first.
// Reported: median wall and CPU ms per command and the chain/whole ratios.
//   node --import tsx bench/micro/cat-chain.bench.ts [--rounds 15] [--repack]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { Codec, ObjectKind, Store } from '../../lib/store/index.js';
import { idOf } from '../../lib/store/object-id.js';

const argv = process.argv.slice(2);
const rounds = argv.includes('--rounds') ? Number(argv[argv.indexOf('--rounds') + 1]) : 15;
const bin = fileURLToPath(new URL('../../bin/layerfs.js', import.meta.url));
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function timedSh(cmd: string, env: NodeJS.ProcessEnv): { ms: number; cpuMs: number } {
  const t = performance.now();
  const r = spawnSync('bash', ['-c', `${cmd}; times`], { env, encoding: 'utf8' });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  const last = r.stdout.trim().split('\n').pop()!;
  const sec = last.split(/\s+/).reduce((a, x) => {
    const m = /(\d+)m([\d.]+)s/.exec(x);
    return m ? a + Number(m[1]) * 60 + Number(m[2]) : a;
  }, 0);
  return { ms, cpuMs: sec * 1000 };
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

function depthOf(store: Store, id: Buffer): number {
  const loc = store.objects.locator(id);
  return loc && loc.codec === Codec.Delta ? 1 + depthOf(store, loc.base!.subarray(0, 32)) : 0;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-cat-chain-'));
try {
  const tree = path.join(tmp, 'tree');
  fs.mkdirSync(tree);
  const line = (i: number) => `export function handler${i}(req, res) { return res.status(200).json({ id: ${i}, ok: true }); }\n`;
  let text = Array.from({ length: 220 }, (_, i) => line(i)).join('');
  fs.writeFileSync(path.join(tree, 'chain.js'), text);
  fs.writeFileSync(path.join(tree, 'whole.js'), text.replace(/handler/g, 'route'));
  const storePath = path.join(tmp, 's.layerfs');
  const client = Client.create(storePath);
  await client.initLayerStack({ name: 'bench', source: tree });
  client.forkBranch({ name: 'main', layer: 'bench' });
  const env = { ...process.env, GIT_DIR: path.join(tmp, 'repo.git'), GIT_WORK_TREE: tree, GIT_CONFIG_NOSYSTEM: '1', HOME: tmp, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@b' };
  timedSh(`cd ${q(tree)} && git init -q && git add -A && git commit -q -m 0`, env);
  const versions: { commit: string; id: Buffer; rev: string }[] = [];
  for (let v = 1; v < 60; v++) {
    const at = (v * 7919) % (text.length - 64);
    text = `${text.slice(0, at)}/* release ${v} */${text.slice(at + 8)}`;
    const body = text;
    const r = await client.toolCall('main', async (ws) => {
      fs.writeFileSync(path.join(ws.path, 'chain.js'), body);
      return { keep: true, message: `release ${v}` };
    }, { projection: 'materialize' });
    if (r.outcome !== 'Created') throw new Error(`tool call ${v}: ${r.outcome}`);
    fs.writeFileSync(path.join(tree, 'chain.js'), body);
    timedSh(`cd ${q(tree)} && git commit -q -am ${v}`, env);
    versions.push({ commit: r.commit!.id, id: idOf(ObjectKind.Blob, Buffer.from(body)), rev: `HEAD~${59 - v}` });
  }
  if (argv.includes('--repack')) {
    await client.repack({});
    timedSh('git gc -q --aggressive', env);
  }
  client.close();
  const store = Store.open(storePath, { readonly: true });
  const depths = versions.map((v) => depthOf(store, v.id));
  store.close();
  const deepest = versions[depths.indexOf(Math.max(...depths))]!;
  const lf = `${q(process.execPath)} ${q(bin)} --store ${q(storePath)}`;
  const commands: [string, string][] = [
    ['layerfs cat chain end', `${lf} cat ${deepest.commit} chain.js > /dev/null`],
    ['layerfs cat whole', `${lf} cat ${deepest.commit} whole.js > /dev/null`],
    ['git cat-file chain end', `git cat-file -p ${deepest.rev}:chain.js > /dev/null`],
    ['git cat-file whole', `git cat-file -p ${deepest.rev}:whole.js > /dev/null`],
  ];
  const got = new Map(commands.map(([n]) => [n, { ms: [] as number[], cpuMs: [] as number[] }]));
  for (const [, cmd] of commands) timedSh(cmd, env);
  for (let r = 0; r < rounds; r++) {
    for (const [name, cmd] of commands.map((_, i) => commands[(i + r) % commands.length]!)) {
      const t = timedSh(cmd, env);
      got.get(name)!.ms.push(t.ms);
      got.get(name)!.cpuMs.push(t.cpuMs);
    }
  }
  const m = (n: string, k: 'ms' | 'cpuMs') => median(got.get(n)![k]);
  const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  for (const [name] of commands) console.log(JSON.stringify({ command: name, rounds, wallMs: Math.round(m(name, 'ms')), cpuMs: Math.round(m(name, 'cpuMs')) }));
  console.log(JSON.stringify({ repacked: argv.includes('--repack'), depth: Math.max(...depths), wallRatio: +(m('layerfs cat chain end', 'ms') / m('layerfs cat whole', 'ms')).toFixed(3), cpuRatio: +(m('layerfs cat chain end', 'cpuMs') / m('layerfs cat whole', 'cpuMs')).toFixed(3), load }));
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
