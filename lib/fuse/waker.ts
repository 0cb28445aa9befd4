/**
 * Wake-up lookups for the kernel backend's serving threads, made by a child process.
 *
 * A serving thread sleeps in read(2) on /dev/fuse; a lookup of a fresh name in its mount wakes
 * it. The daemon must not make that lookup from one of its own threads: if the daemon is killed
 * after its serving thread has read the request (here: the GETATTR that permission checking
 * sends first) and before it answered, the kernel waits for the answer uninterruptibly. That
 * thread can then never exit, so neither can the daemon; its /dev/fuse descriptor stays open,
 * the mount hangs every access instead of answering ENOTCONN, and the daemon's socket and lock
 * stay held, so no new daemon can start (found by test/reliability/crash-fuse.test.ts: SIGKILL
 * during a commit left it that way every time). A shell child that makes the lookups is a
 * separate process: when the daemon dies its descriptor closes, the kernel aborts the connection,
 * the child's pending lookup fails, and the child exits at the end of its input.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { lstat } from 'node:fs/promises';

let child: ChildProcess | undefined;

function waker(): ChildProcess | undefined {
  if (child && child.exitCode === null && child.signalCode === null && child.stdin?.writable) return child;
  try {
    // `[ -e P ]` is a shell builtin: one stat(2) per line, no fork.
    const c = spawn('/bin/sh', ['-c', 'while IFS= read -r p; do [ -e "$p" ]; done'], { stdio: ['pipe', 'ignore', 'ignore'] });
    c.on('error', () => {
      if (child === c) child = undefined;
    });
    c.stdin!.on('error', () => {});
    // Neither the child nor its pipe keeps the daemon's event loop alive.
    c.unref();
    (c.stdin as unknown as { unref?: () => void }).unref?.();
    child = c;
    return c;
  } catch {
    return undefined;
  }
}

/** Makes a lookup of `path` (inside a mount this process serves) without blocking on it. */
export function wakeLookup(path: string): void {
  const c = path.includes('\n') ? undefined : waker();
  if (c) c.stdin!.write(`${path}\n`);
  // No shell, or a name the line protocol cannot carry: the in-process lookup (async).
  else lstat(path).catch(() => {});
}
