/**
 * Interactive shells in a Workspace: the shell runs on a pseudo-terminal of its own (node-pty),
 * inside the Workspace's Sandbox when it has one, and is recorded as a foreground execution
 * owned by this process, so a commit meanwhile answers Busy. The PTY is the shell's controlling
 * terminal: ^C typed into it interrupts the foreground job inside, a resize reaches the
 * programs as SIGWINCH, and the caller's own terminal is never handed inside (docs/DECISIONS.md
 * says why node-pty).
 */
import { Duplex } from 'node:stream';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { createRequire } from 'node:module';
import type { IPty } from 'node-pty';
import { LayerFsError } from '../errors.js';

/**
 * node-pty is an optional peer, loaded on first use: it is a native module with an install script
 * that builds from source, and only shells need it, so a consumer installs it only to use them.
 */
function ptySpawn(...args: Parameters<typeof import('node-pty').spawn>): IPty {
  let pty: typeof import('node-pty');
  try {
    pty = createRequire(import.meta.url)('node-pty') as typeof import('node-pty');
  } catch (e) {
    throw new LayerFsError('ERR_NATIVE', `interactive shells need the node-pty package, which did not load: ${(e as Error).message}`, {
      hint: 'install it beside layerfs (npm install node-pty; it builds from source), or use workspace exec',
    });
  }
  return pty.spawn(...args);
}
import { invalidArgument } from '../errors.js';
import { check, infoOf, newRecordDir, type ExecRequest, type ExecutionInfo } from './exec.js';
import { EXIT, META, STOP, createJsonOnce, exists, exitRecord, processRef, writeJsonAtomic, newMetaRecord } from './exec-records.js';
import { launchOf, sandboxExit, startWatch } from './sandbox-launch.js';

export interface ShellRequest extends Omit<ExecRequest, 'argv'> {
  /** The shell and its arguments; $SHELL, else bash, else sh. */
  argv?: string[];
  cols?: number;
  rows?: number;
}

/** A running shell: its terminal as a stream (write keys, read the screen), resize, kill, end. */
export interface ShellSession {
  id: string;
  pid: number;
  /** The PTY: what is written goes to the shell as typed input; what is read is its screen output. */
  stream: Duplex;
  resize(cols: number, rows: number): void;
  kill(signal?: NodeJS.Signals): void;
  /** Resolves when the shell has exited (and its execution is recorded as ended). */
  exited: Promise<ExecutionInfo>;
}

function defaultShell(env: NodeJS.ProcessEnv): string[] {
  for (const s of [env.SHELL, '/bin/bash', '/bin/sh']) if (s && existsSync(s)) return [s, '-i'];
  return ['/bin/sh', '-i'];
}

function dimension(v: number | undefined, fallback: number, what: string): number {
  if (v === undefined) return fallback;
  if (!Number.isInteger(v) || v < 1 || v > 10_000) throw invalidArgument(`${what} must be a whole number from 1 to 10000`);
  return v;
}

export function startShell(req: ShellRequest): ShellSession {
  const env = req.env ?? process.env;
  const r = check({ ...req, env, argv: req.argv ?? defaultShell(env) });
  const cols = dimension(req.cols, 80, 'cols');
  const rows = dimension(req.rows, 24, 'rows');
  const { id, dir } = newRecordDir(r.stateDir);
  const launch = launchOf(r, id, dir, true);
  const [file, ...args] = (launch?.argv ?? r.argv) as [string, ...string[]];
  const startMs = performance.now();
  const pty: IPty = ptySpawn(file, args, { name: env.TERM || 'xterm-256color', cols, rows, cwd: r.cwd, env: (launch?.env ?? r.env) as Record<string, string> });
  const meta = newMetaRecord(r, id, { detached: false, owner: processRef(process.pid), command: processRef(pty.pid), ...(launch ? { sandbox: launch.record } : {}) });
  writeJsonAtomic(dir, META, meta);
  const watch = launch ? startWatch(launch.record) : null;

  const stream = new Duplex({
    read() {
      // data is pushed as the PTY produces it
    },
    write(chunk: Buffer | string, _enc, cb) {
      pty.write(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      cb();
    },
  });
  pty.onData((d) => stream.push(d));
  const exited = new Promise<ExecutionInfo>((resolve) => {
    pty.onExit(({ exitCode, signal }) => {
      const sig = signal ? (signalName(signal) ?? null) : null;
      void (async () => {
        const usage = launch ? await sandboxExit(launch.record, sig ? null : exitCode, sig, startMs, watch) : {};
        createJsonOnce(dir, EXIT, { ...exitRecord(sig ? null : exitCode, sig, exists(dir, STOP)), ...usage });
        stream.push(null);
        resolve(infoOf(dir));
      })();
    });
  });
  return {
    id,
    pid: pty.pid,
    stream,
    resize: (c, r2) => pty.resize(dimension(c, 80, 'cols'), dimension(r2, 24, 'rows')),
    kill: (signal) => pty.kill(signal),
    exited,
  };
}

function signalName(n: number): NodeJS.Signals | undefined {
  return (Object.entries(constants.signals) as [NodeJS.Signals, number][]).find(([, v]) => v === n)?.[0];
}
