// A FUSE Workspace commits a large change set with the daemon's memory bounded, the client waits
// for a long commit as long as the daemon reports progress (heartbeats), and a daemon told to
// stop in the middle of such a commit exits within seconds without publishing half of it.
// Files are written by `cp -r` from a generated tree outside the mount (one process, as a tool
// would), then committed through the client API the SDK uses. The daemon stores nothing ahead
// (LAYERFS_PRESTORE=0): the commit itself is what is measured and stopped here (a mount that
// stores a change while it is written is tested in prestore.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from 'node:net';
import { commitFuse, daemonStatus, detachStale, fuseAvailable } from '../../lib/fuse/index.js';
import { daemonPaths } from '../../lib/fuse/protocol.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { processAlive } from '../helpers/process-gone.js';
import { seededBytes } from '../helpers/tmp.js';
import { run, setupStore } from './helpers.js';

const skip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;
const FILES = 20_000;
const CEILING_MIB = 256;

/** `count` small files of varied sizes (64 B – 12 KiB) in directories of 200, each distinct. */
function generate(dir: string, count: number, salt: string): void {
  for (let i = 0; i < count; i++) {
    const sub = join(dir, `pkg${Math.floor(i / 200)}`);
    if (i % 200 === 0) mkdirSync(sub, { recursive: true });
    const size = 64 + ((i * 7919) % 12_288);
    writeFileSync(join(sub, `f${i}.js`), `// ${salt} ${i}\n${seededBytes(i, size).toString('base64').slice(0, size)}\n`);
  }
}

function vm(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) / 1024;
}

/**
 * Sends a commit over a raw connection to the daemon, sends the daemon SIGTERM at the first
 * heartbeat, and returns every line the daemon sent (heartbeats, then the answer if any) with
 * the time the daemon took to exit after the signal.
 */
async function commitAndTerm(storePath: string, workspaceId: string, pid: number): Promise<Record<string, unknown>[] & { exitMs: number; answerMs: number | null }> {
  const paths = daemonPaths(storePath);
  const token = readFileSync(paths.token, 'utf8').trim();
  const sock = connect(paths.socket);
  const lines: Record<string, unknown>[] = [];
  let termAt = 0;
  let answerAt = 0;
  let buf = '';
  const closed = new Promise<void>((resolve) => sock.on('close', () => resolve()));
  sock.on('error', () => {});
  sock.setEncoding('utf8');
  sock.on('data', (d: string) => {
    buf += d;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const l = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      buf = buf.slice(nl + 1);
      lines.push(l);
      if ('ok' in l && answerAt === 0) answerAt = performance.now();
      if ('progress' in l && termAt === 0) {
        termAt = performance.now();
        process.kill(pid, 'SIGTERM');
      }
    }
  });
  sock.write(JSON.stringify({ op: 'commit', token, workspaceId }) + '\n');
  await closed;
  assert.ok(termAt > 0, `no heartbeat came before the connection closed: ${JSON.stringify(lines)}`);
  while (processAlive(pid).alive && performance.now() - termAt < 15_000) await sleep(20);
  return Object.assign(lines, { exitMs: Math.round(performance.now() - termAt), answerMs: answerAt > 0 ? Math.round(answerAt - termAt) : null });
}

test(`a FUSE commit of ${FILES} new files: bounded daemon memory, heartbeats, then a stop mid-commit`, { skip, timeout: 900_000 }, async () => {
  const s = await setupStore((src) => writeFileSync(join(src, 'README'), 'readme\n'), 'layerfs-big-commit-');
  process.env.LAYERFS_PRESTORE = '0'; // for the daemon this test starts
  const at = join(s.dir, 'ws');
  const gen = join(s.dir, 'gen');
  generate(gen, FILES, 'one');
  try {
    const ws = await s.client.createWorkspace('main', { at, projection: 'fuse' });
    const pid = (await daemonStatus(s.storePath))!.pid;
    const cp = await run('cp', ['-r', `${gen}/.`, `${at}/`]);
    assert.equal(cp.code, 0, cp.stderr);
    const afterWrites = vm(pid, 'VmHWM');

    // The client's deadline (10 s without an answer or a heartbeat) is its only limit: a longer commit that progresses is waited for.
    const t0 = performance.now();
    const out = await commitFuse(s.storePath, ws.id, { timeoutMs: 10_000 });
    const ms = performance.now() - t0;
    assert.equal(out.outcome, 'Created');
    const hwm = vm(pid, 'VmHWM');
    process.stdout.write(`# ${FILES} files: commit ${ms.toFixed(0)} ms, daemon VmHWM ${afterWrites.toFixed(0)} MiB after the writes, ${hwm.toFixed(0)} MiB after the commit\n`);
    if (process.env.LAYERFS_TEST_RSS_CEILING === '1') assert.ok(hwm <= CEILING_MIB, `daemon peak RSS ${hwm.toFixed(0)} MiB > ${CEILING_MIB} MiB`);
    const head = s.client.branch('main').headCommitId;
    assertStoreIntact(s.storePath);

    // A second change of every file, committed over a connection of our own that shows the
    // heartbeats; once one says the commit progresses, the daemon gets SIGTERM.
    const gen2 = join(s.dir, 'gen2');
    generate(gen2, FILES, 'two');
    const cp2 = await run('cp', ['-r', `${gen2}/.`, `${at}/`]);
    assert.equal(cp2.code, 0, cp2.stderr);
    const lines = await commitAndTerm(s.storePath, ws.id, pid);
    const beats = lines.filter((l) => 'progress' in l).map((l) => l.progress as number);
    const answer = lines.find((l) => 'ok' in l);
    process.stdout.write(`# SIGTERM mid-commit after ${beats.length} heartbeat(s) (${beats.join(', ')}): answered in ${lines.answerMs} ms, the daemon exited in ${lines.exitMs} ms; answer ${JSON.stringify(answer)}\n`);
    assert.ok(beats.length >= 1 && beats.every((b, i) => i === 0 || b !== beats[i - 1]), 'heartbeats carry changing progress');
    // The stop does not wait for the commit: its answer comes in a fraction of what the whole
    // first commit took on this machine in the same minute (so a loaded runner scales both).
    // The exit adds the unmount and at most 2 s of spool removal, bounded as liveness only.
    const abortBound = Math.max(5000, ms / 2);
    if (lines.answerMs !== null) assert.ok(lines.answerMs <= abortBound, `the abort was answered after ${lines.answerMs} ms (the whole first commit took ${ms.toFixed(0)} ms)`);
    assert.ok(lines.exitMs <= abortBound + 5000, `the daemon took ${lines.exitMs} ms to exit (the whole first commit took ${ms.toFixed(0)} ms)`);
    // The commit was stopped, not finished: its answer (when the daemon could still send it) says so.
    if (answer) assert.equal((answer.error as { code?: string } | undefined)?.code, 'ERR_ABORTED');
    // Nothing half-published: the Branch is where the first commit left it, and the Store verifies.
    assert.equal(s.client.branch('main').headCommitId, head);
    assertStoreIntact(s.storePath);
    // The Workspace lost its uncommitted change with its daemon; it ends cleanly with discard.
    const end = await s.client.endWorkspace(ws.id, { discard: true });
    assert.equal(end.outcome, 'Ended');
  } finally {
    await detachStale(at).catch(() => false);
    s.client.close();
  }
  assertStoreIntact(s.storePath);
});
