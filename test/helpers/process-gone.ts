// Waiting for a SIGKILLed process to be really gone. A process whose thread-group leader shows
// as a zombie ('Z' in /proc/PID/stat) may still have other threads exiting, and the process's
// files (a FUSE daemon's /dev/fuse descriptor) are released only when the last thread exits.
// Until then the kernel still queues requests to that FUSE connection, and the abort then fails
// them with ECONNABORTED instead of the ENOTCONN of a dead connection.
import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/** Whether any thread of `pid` still exists (a leader-only zombie counts as gone). */
export function processAlive(pid: number): { alive: boolean; leaderZombie: boolean } {
  let stat: string;
  let tasks: string[];
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return { alive: false, leaderZombie: false };
  }
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  const zombie = state === 'Z' || state === 'X';
  // A zombie leader with other tasks listed: those threads are still on their way out.
  return { alive: !zombie || tasks.length > 1, leaderZombie: zombie };
}

/** Waits until every thread of `pid` has exited; reports whether the leader was a zombie first. */
export async function processGone(pid: number, timeoutMs = 60_000): Promise<{ leaderZombieFirst: boolean }> {
  let leaderZombieFirst = false;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const a = processAlive(pid);
    if (!a.alive) return { leaderZombieFirst };
    if (a.leaderZombie) leaderZombieFirst = true;
    if (Date.now() > deadline) throw new Error(`process ${pid} did not exit within ${timeoutMs} ms`);
    await sleep(5);
  }
}

/** Alive and not a zombie. */
export function alive(pid: number): boolean {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return st.slice(st.lastIndexOf(')') + 2, st.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Whether `path` is a mount point in this process's mount namespace. */
export async function mounted(path: string): Promise<boolean> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  return text.split('\n').some((l) => l.split(' ')[4] === path);
}
