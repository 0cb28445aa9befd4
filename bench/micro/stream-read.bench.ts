// Streamed read of one large file against `git cat-file blob HEAD:FILE | cat > /dev/null`,
// alternated round by round (same minute, same load). The file is imported once into a fresh
// Store (Client.create + initLayerStack) and committed once to a fresh git repository (loose
// objects). layerfs rounds: `readFile` streamed to the end in this process on a fresh
// connection ("sdk"), and, with --cli, `layerfs cat STATE FILE | cat > /dev/null` as a process.
// With --before DIR (and --cli), the `layerfs cat` of a checkout of the code before runs in the
// same rounds, before or after the current one alternately ("beforeCliMs").
// Reported per round: wall ms and CPU ms (user + system; for processes, of the whole pipeline).
// With --bound, first the single-core floor of the work a streamed read cannot skip: every pack
// row of the file held in memory, decodeRun (decode and BLAKE3 re-hash of every chunk) over them
// on one thread (CPU time), against a memcpy of the same canonical bytes (what `cat` does per byte).
// With --ab, each round also reads the file with pack rows read by SELECT (LAYERFS_PACK_ROWS=0,
// "selectMs"), before or after the default read alternately: the row reads' A/B in the same round.
// With --mapped, each round also reads it on a `{ readonly: true, mapped: true }` connection
// ("mappedMs"), before or after the default read alternately.
//   node --import tsx bench/micro/stream-read.bench.ts --file PATH [--rounds 5] [--cli [--before DIR]] [--bound] [--ab] [--mapped]  → JSON lines
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { chunkAndHash, decodeRun, RUN_FIELDS } from '../../lib/native/index.js';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { GIT, gitEnv, gitInitCommit } from '../lib/git.js';
import { arg } from '../lib/micro-ab.js';

const file = path.resolve(arg('--file') ?? '');
if (!fs.existsSync(file)) throw new Error('--file PATH: the file to read');
const rounds = Number(arg('--rounds', '5'));
const cli = process.argv.includes('--cli');
/** --before DIR: a checkout of the code before (built: dist/ and its addon), whose `layerfs cat` runs in the same rounds. */
const beforeDir = arg('--before');
const beforeBin = beforeDir ? path.join(path.resolve(beforeDir), 'bin/layerfs.js') : undefined;
const size = fs.statSync(file).size;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-stream-read-'));
const BIN = fileURLToPath(new URL('../../bin/layerfs.js', import.meta.url));

/** A shell pipeline, timed with its children's CPU (bash `times` after the pipeline). */
function timedSh(cmd: string, env: NodeJS.ProcessEnv): { ms: number; cpuMs: number } {
  const t = performance.now();
  const r = spawnSync('bash', ['-c', `${cmd}; times`], { env, encoding: 'utf8' });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  // `times`: the shell's user/sys, then its children's.
  const lines = r.stdout.trim().split('\n');
  const sec = (s: string) => s.split(/\s+/).reduce((a, x) => {
    const m = /(\d+)m([\d.]+)s/.exec(x);
    return m ? a + Number(m[1]) * 60 + Number(m[2]) : a;
  }, 0);
  return { ms, cpuMs: sec(lines[lines.length - 1]!) * 1000 };
}

/** Single-core decode + verify of every chunk of `file` from rows in memory, and a memcpy of the same bytes: ms per MiB. */
function bound(storePath: string): Record<string, number> {
  const chunks = chunkAndHash(fs.readFileSync(file));
  const store = Store.open(storePath);
  const byPack = new Map<number, { spec: number[]; ids: Buffer[] }>();
  for (const c of chunks) {
    const loc = store.objects.locator(c.id)!;
    const e = byPack.get(loc.pack) ?? { spec: [], ids: [] };
    e.spec.push(loc.offset, loc.length, loc.codec, loc.codec === 0 ? 0 : loc.at, c.length);
    e.ids.push(c.id);
    byPack.set(loc.pack, e);
  }
  const rows = store.chunkRuns();
  const runs = [...byPack].map(([pack, e]) => ({ row: rows.pack(pack)!, spec: new Float64Array(e.spec), ids: Buffer.concat(e.ids) }));
  store.close();
  const out = Buffer.allocUnsafe(4 * 1024 * 1024);
  const mib = size / 1048576;
  // CPU time (this thread does all of it: one thread asked for), best of 3.
  const best = (fn: () => void) => Math.min(...[0, 1, 2].map(() => { const t = process.cpuUsage(); fn(); const d = process.cpuUsage(t); return (d.user + d.system) / 1000; }));
  const decodeMs = best(() => {
    for (const r of runs) {
      const ok = new Uint8Array(r.spec.length / RUN_FIELDS);
      decodeRun(r.row, r.spec, r.ids, out, ok, 1);
      if (ok.includes(0)) throw new Error('a chunk did not verify');
    }
  });
  const src = Buffer.allocUnsafe(out.length);
  const copyMs = best(() => {
    for (let left = size; left > 0; left -= out.length) src.copy(out, 0, 0, Math.min(left, out.length));
  });
  return { decodeVerifyMsPerMiB: Math.round((decodeMs / mib) * 1000) / 1000, memcpyMsPerMiB: Math.round((copyMs / mib) * 1000) / 1000, rows: runs.length };
}

try {
  const dir = path.join(tmp, 'tree');
  fs.mkdirSync(dir);
  const name = 'large.bin';
  fs.copyFileSync(file, path.join(dir, name));
  const storePath = path.join(tmp, 's.layerfs');
  let c = Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: dir });
  await c.close();
  const env = gitEnv(path.join(tmp, 'repo.git'), dir);
  gitInitCommit(env, dir);
  const ref = String(init.layer.id);
  if (process.argv.includes('--bound')) console.log(JSON.stringify({ bound: bound(storePath), load: os.loadavg()[0]!.toFixed(1) }));
  /** readFile to the end on a fresh connection: wall and CPU ms. */
  const sdkRead = async (select: boolean, mapped = false): Promise<{ ms: number; cpuMs: number }> => {
    if (select) process.env.LAYERFS_PACK_ROWS = '0';
    try {
      c = Client.connect(storePath, mapped ? { readonly: true, mapped: true } : {});
      const cpu0 = process.cpuUsage();
      const t = performance.now();
      let n = 0;
      for (const piece of c.readFile(init.layer.id, name)) n += piece.length;
      const ms = performance.now() - t;
      const cpu = process.cpuUsage(cpu0);
      await c.close();
      if (n !== size) throw new Error(`read ${n} of ${size} bytes`);
      return { ms, cpuMs: (cpu.user + cpu.system) / 1000 };
    } finally {
      delete process.env.LAYERFS_PACK_ROWS;
    }
  };
  const ab = process.argv.includes('--ab');
  const withMapped = process.argv.includes('--mapped');
  for (let r = 0; r < rounds; r++) {
    const mappedFirst = withMapped && r % 2 === 1 ? await sdkRead(false, true) : undefined;
    const before = ab && r % 2 === 1 ? await sdkRead(true) : undefined;
    const sdk = await sdkRead(false);
    const select = ab && r % 2 === 0 ? await sdkRead(true) : before;
    const mapped = withMapped && r % 2 === 0 ? await sdkRead(false, true) : mappedFirst;
    const g = timedSh(`${GIT} cat-file blob HEAD:${name} | cat > /dev/null`, env);
    const out: Record<string, unknown> = {
      round: r,
      bytes: size,
      sdkMs: Math.round(sdk.ms),
      sdkCpuMs: Math.round(sdk.cpuMs),
      ...(select ? { selectMs: Math.round(select.ms), selectCpuMs: Math.round(select.cpuMs) } : {}),
      ...(mapped ? { mappedMs: Math.round(mapped.ms), mappedCpuMs: Math.round(mapped.cpuMs) } : {}),
      gitMs: Math.round(g.ms),
      gitCpuMs: Math.round(g.cpuMs),
    };
    if (cli) {
      const catOf = (bin: string) => timedSh(`node ${bin} --store ${storePath} cat ${ref} ${name} | cat > /dev/null`, process.env);
      // With --before, the code before's command in the same round, before or after alternately.
      const early = beforeBin && r % 2 === 1 ? catOf(beforeBin) : undefined;
      const l = catOf(BIN);
      const b = beforeBin && r % 2 === 0 ? catOf(beforeBin) : early;
      out.cliMs = Math.round(l.ms);
      out.cliCpuMs = Math.round(l.cpuMs);
      if (b) {
        out.beforeCliMs = Math.round(b.ms);
        out.beforeCliCpuMs = Math.round(b.cpuMs);
      }
      out.cliRateVsGit = Math.round((g.ms / l.ms) * 100) / 100;
    }
    out.rateVsGit = Math.round((g.ms / sdk.ms) * 100) / 100;
    out.load = os.loadavg()[0]!.toFixed(1);
    console.log(JSON.stringify(out));
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
