/**
 * On-disk records of Workspace executions, shared by the CLI side (exec.ts) and the detached
 * supervisor (supervisor.ts). The CLI is stateless between invocations, so everything another
 * process needs to know about an execution lives here:
 *
 *   <stateDir>/<id>/meta.json    what runs where, who owns it (written atomically: tmp + rename)
 *   <stateDir>/<id>/output.log   stdout and stderr interleaved (detached executions only)
 *   <stateDir>/<id>/exit.json    how it ended (created once: tmp + link, so the first writer wins)
 *   <stateDir>/<id>/stop.json    a stop was requested (created once)
 *   <stateDir>/<id>/env.json     the command's environment, handed to the supervisor, which
 *                                deletes it as soon as it has read it (mode 0600)
 *
 * meta.json has exactly one writer at a time: the process that creates the record writes it
 * first; a detached supervisor waits until it exists before it rewrites it with the command pid.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, linkSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { LayerFsError } from '../errors.js';
import type { ResourceUsage } from './cgroup.js';
import type { SandboxOutcome, SandboxRecord } from './sandbox-launch.js';

export const META = 'meta.json';
export const EXIT = 'exit.json';
export const STOP = 'stop.json';
export const OUTPUT = 'output.log';
export const ENV = 'env.json';

export type ExecutionState = 'running' | 'exited' | 'killed' | 'lost';

/** A process as recorded: its pid plus what tells it apart from a later process with that pid. */
export interface ProcessRef {
  pid: number;
  /** /proc/<pid>/stat field 22 (clock ticks after boot), or null where there is no /proc. */
  startTime: string | null;
  /** /proc/sys/kernel/random/boot_id when recorded, or null where there is none. */
  bootId: string | null;
}

export interface MetaRecord {
  version: 1;
  id: string;
  workspaceId: string;
  argv: string[];
  cwd: string;
  detached: boolean;
  startedAt: string;
  /** The process that waits for the command and writes exit.json: the supervisor (detached) or the caller (foreground). */
  owner: ProcessRef;
  /** The command, once spawned. */
  command: ProcessRef | null;
  /** The command's process group when it leads its own (detached), else null. */
  pgid: number | null;
  /** The Sandbox it runs in and its cgroup leaf, when sandboxed. */
  sandbox?: SandboxRecord;
  /** What the supervisor spawns when it differs from argv (the sandbox launcher, then argv). */
  launch?: string[];
}

/** A sandboxed execution's resource use, from its cgroup leaf, plus its wall time. */
export interface ExecutionResources extends ResourceUsage {
  wallMs: number;
  /** With a disk cap: the Workspace's highest disk use measured while it ran, bytes. */
  peakDiskBytes?: number;
}

export interface ExitRecord {
  state: 'exited' | 'killed';
  exitCode: number | null;
  signal: string | null;
  endedAt: string;
  /** Why the command could not start, or who wrote the record when its owner had died. */
  note?: string;
  /** Sandboxed: a limit that ended it (OutOfMemory) or refused its forks (PidsLimit). */
  outcome?: SandboxOutcome;
  resources?: ExecutionResources;
}

export const ID_RE = /^[0-9a-f]{32}$/;

/** 16 random bytes as hex with a UUIDv7 millisecond prefix, so ids sort by start. */
export function newExecutionId(): string {
  const b = randomBytes(16);
  const ms = Date.now();
  b.writeUIntBE(Math.floor(ms / 0x10000), 0, 4);
  b.writeUInt16BE(ms % 0x10000, 4);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return b.toString('hex');
}

let cachedBootId: string | null | undefined;

function bootId(): string | null {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim() || null;
    } catch {
      cachedBootId = null;
    }
  }
  return cachedBootId;
}

interface ProcStat {
  state: string;
  pgrp: number;
  tpgid: number;
  startTime: string;
}

function procStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  // Field 2 (comm) is parenthesised and may itself hold spaces and parentheses.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = f[0];
  const startTime = f[19];
  if (state === undefined || startTime === undefined) return null;
  return { state, pgrp: Number(f[2]), tpgid: Number(f[5]), startTime };
}

/** How an execution starts: who waits for it, the command once spawned, its Sandbox and launcher. */
export interface MetaStart {
  detached: boolean;
  owner: ProcessRef;
  command: ProcessRef | null;
  sandbox?: SandboxRecord;
  launch?: string[];
}

/** The meta.json record of an execution starting now, the same for exec, detached exec and shell. */
export function newMetaRecord(r: { workspaceId: string; argv: string[]; cwd: string }, id: string, start: MetaStart): MetaRecord {
  return {
    version: 1,
    id,
    workspaceId: r.workspaceId,
    argv: r.argv,
    cwd: r.cwd,
    detached: start.detached,
    startedAt: new Date().toISOString(),
    owner: start.owner,
    command: start.command,
    pgid: null,
    ...(start.sandbox ? { sandbox: start.sandbox } : {}),
    ...(start.launch ? { launch: start.launch } : {}),
  };
}

export function processRef(pid: number): ProcessRef {
  return { pid, startTime: procStat(pid)?.startTime ?? null, bootId: bootId() };
}

/**
 * Whether the recorded process still exists and is the same process: not a zombie, and neither
 * the boot nor the start time differ (pids are reused).
 */
export function isAlive(ref: ProcessRef): boolean {
  if (ref.bootId !== null && bootId() !== null && ref.bootId !== bootId()) return false;
  try {
    process.kill(ref.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const st = procStat(ref.pid);
  if (st === null) return true; // no /proc (or hidden): kill(0) is all we know
  if (st.state === 'Z' || st.state === 'X') return false;
  return ref.startTime === null || ref.startTime === st.startTime;
}

/**
 * Whether any live (non-zombie) process is left in process group `pgid`. Zombies count as members
 * for kill(-pgid, 0), and an init that reaps slowly keeps them around, so Linux scans /proc.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((n) => /^[0-9]+$/.test(n));
  } catch {
    return true;
  }
  return pids.some((p) => {
    const st = procStat(Number(p));
    return st !== null && st.pgrp === pgid && st.state !== 'Z' && st.state !== 'X';
  });
}

/** Signals a process or, with `group`, its whole process group; false when nothing was there. */
export function sendSignal(pid: number, signal: NodeJS.Signals, group: boolean): boolean {
  try {
    process.kill(group ? -pid : pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * True when this process is in the foreground process group of its controlling terminal, i.e. a
 * SIGINT it gets most likely came from the terminal, which delivers it to the whole group.
 */
export function inTerminalForeground(): boolean {
  const st = procStat(process.pid);
  return st !== null && st.tpgid > 0 && st.tpgid === st.pgrp;
}

function tmpName(dir: string, name: string): string {
  return join(dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
}

function writeTmp(path: string, data: string, mode: number): void {
  const fd = openSync(path, 'wx', mode);
  try {
    writeSync(fd, data);
  } finally {
    closeSync(fd);
  }
}

/** Replaces `dir/name` atomically. */
export function writeJsonAtomic(dir: string, name: string, value: unknown, mode = 0o644): void {
  const tmp = tmpName(dir, name);
  writeTmp(tmp, JSON.stringify(value, null, 2) + '\n', mode);
  try {
    renameSync(tmp, join(dir, name));
  } catch (e) {
    safeUnlink(tmp);
    throw e;
  }
}

/** Creates `dir/name` atomically unless it exists; true when this call created it. */
export function createJsonOnce(dir: string, name: string, value: unknown): boolean {
  const tmp = tmpName(dir, name);
  writeTmp(tmp, JSON.stringify(value, null, 2) + '\n', 0o644);
  try {
    linkSync(tmp, join(dir, name));
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    safeUnlink(tmp);
  }
}

export function safeUnlink(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** Reads a JSON record; null when the file does not exist. */
export function readJson<T>(dir: string, name: string): T | null {
  const path = join(dir, name);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new LayerFsError('ERR_NATIVE_IO', `cannot read execution record ${path}`, { path, errno: (e as NodeJS.ErrnoException).code, cause: e });
  }
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new LayerFsError('ERR_CORRUPT', `execution record ${path} is not valid JSON`, { path, cause: e, hint: 'remove that execution directory' });
  }
}

export function exists(dir: string, name: string): boolean {
  return existsSync(join(dir, name));
}

/** Exit status as the record wants it, from a child's 'exit' event. */
export function exitRecord(code: number | null, signal: NodeJS.Signals | null, stopRequested: boolean, note?: string): ExitRecord {
  const r: ExitRecord = {
    state: signal !== null || stopRequested ? 'killed' : 'exited',
    exitCode: code,
    signal,
    endedAt: new Date().toISOString(),
  };
  if (note !== undefined) r.note = note;
  return r;
}

/** The conventional shell status for a command that could not be started. */
export function spawnFailureCode(errno: string | undefined): number {
  return errno === 'EACCES' || errno === 'ENOEXEC' || errno === 'EISDIR' ? 126 : 127;
}
