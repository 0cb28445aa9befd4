/**
 * Supervisor of one detached execution, run by startDetached (exec.ts) as
 *
 *   node [loader flags] supervisor.js <execution directory>
 *
 * in a session of its own with stdio ignored, so it outlives the CLI invocation that started it.
 * It waits until that invocation has written meta.json (which names this process as owner),
 * starts the command in a new session and process group with stdout and stderr appended to
 * output.log, records the command's pid in meta.json, waits, and writes exit.json. SIGTERM,
 * SIGINT and SIGHUP sent to the supervisor are passed on to the command's process group.
 *
 * Killing the supervisor does not kill the command (it leads its own group); readers then see
 * the execution as running while the command lives, and as 'lost' once it has gone too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ENV,
  EXIT,
  META,
  OUTPUT,
  STOP,
  createJsonOnce,
  exists,
  exitRecord,
  processRef,
  readJson,
  safeUnlink,
  sendSignal,
  spawnFailureCode,
  writeJsonAtomic,
  type MetaRecord,
} from './exec-records.js';
import { sandboxExit, startWatch } from './sandbox-launch.js';

/** How long to wait for the starting invocation to write meta.json before giving up. */
const META_WAIT_MS = 10_000;

async function waitForMeta(dir: string): Promise<MetaRecord | null> {
  const deadline = performance.now() + META_WAIT_MS;
  for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
    const meta = readJson<MetaRecord>(dir, META);
    if (meta !== null) return meta;
    if (performance.now() > deadline) return null;
    await sleep(delay);
  }
}

function log(dir: string, line: string): void {
  try {
    appendFileSync(join(dir, OUTPUT), `layerfs: ${line}\n`);
  } catch {
    // nowhere left to say it
  }
}

async function supervise(dir: string): Promise<void> {
  const meta = await waitForMeta(dir);
  // Without a record naming us, the starting invocation died (or this is not our directory):
  // run nothing, since nobody could find, follow or stop the command.
  if (meta === null || meta.owner.pid !== process.pid) {
    safeUnlink(join(dir, ENV));
    return;
  }
  const env = readJson<NodeJS.ProcessEnv>(dir, ENV) ?? process.env;
  safeUnlink(join(dir, ENV));
  if (exists(dir, STOP)) {
    createJsonOnce(dir, EXIT, exitRecord(null, null, true, 'stopped before it started'));
    return;
  }

  const [program, ...args] = meta.launch ?? meta.argv;
  const startMs = performance.now();
  if (program === undefined) throw new Error('empty argv');
  const out = openSync(join(dir, OUTPUT), 'a');
  let child: ChildProcess;
  try {
    child = spawn(program, args, { cwd: meta.cwd, env, stdio: ['ignore', out, out], detached: true });
  } finally {
    closeSync(out);
  }

  const pid = child.pid;
  if (pid === undefined) {
    // The command could not start (the program vanished since startDetached checked it, or is
    // not executable): record it the way a shell would, with the reason in the output.
    const err = await new Promise<NodeJS.ErrnoException>((resolve) => child.once('error', resolve));
    const message = `cannot run ${program}: ${err.code ?? err.message}`;
    log(dir, message);
    createJsonOnce(dir, EXIT, exitRecord(spawnFailureCode(err.code), null, false, message));
    return;
  }
  child.on('error', () => {
    // signalling failures are reported by sendSignal's return value instead
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );

  writeJsonAtomic(dir, META, { ...meta, command: processRef(pid), pgid: pid } satisfies MetaRecord);
  const watch = meta.sandbox ? startWatch(meta.sandbox) : null;
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => sendSignal(pid, sig, true));
  // A stop that came before the pid was recorded could not signal the command; do it for it.
  if (exists(dir, STOP)) sendSignal(pid, 'SIGTERM', true);

  const { code, signal } = await exited;
  const usage = meta.sandbox ? await sandboxExit(meta.sandbox, code, signal, startMs, watch) : {};
  createJsonOnce(dir, EXIT, { ...exitRecord(code, signal, exists(dir, STOP)), ...usage });
}

const dir = process.argv[2];
if (dir === undefined) {
  process.stderr.write('usage: supervisor <execution directory>\n');
  process.exit(2);
}
supervise(dir).then(
  () => process.exit(0),
  (e: unknown) => {
    log(dir, `supervisor failed: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
