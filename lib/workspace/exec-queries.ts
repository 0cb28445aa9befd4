/**
 * What an execution is, read from its record directory (layout in exec-records.ts): its
 * ExecutionInfo and liveness, id prefixes resolved to records, and the queries a Workspace's
 * commit and removal ask. Apart from exec.ts, which starts, follows and stops executions, so
 * that reading records needs none of the process machinery.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { LayerFsError, invalidArgument } from '../errors.js';
import { ensurePrivateDir } from '../monitor/private-file.js';
import { EXIT, ID_RE, META, exists, isAlive, newExecutionId, readJson, type ExecutionResources, type ExecutionState, type ExitRecord, type MetaRecord } from './exec-records.js';
import type { SandboxOutcome } from './sandbox-launch.js';

export interface ExecutionInfo {
  /** 32 hex digits; a UUIDv7-style time prefix makes ids sort by start. */
  id: string;
  workspaceId: string;
  argv: string[];
  cwd: string;
  /** The command's pid; null until it has started (a detached one starts shortly after startDetached returns). */
  pid: number | null;
  /** The pid of the process that waits for the command and records its exit: the supervisor (detached) or the caller (foreground). */
  ownerPid: number;
  detached: boolean;
  startedAt: string;
  state: ExecutionState;
  exitCode: number | null;
  signal: string | null;
  endedAt: string | null;
  /** The Sandbox it runs in, when its Workspace has one. */
  sandbox?: string;
  /** Sandboxed and ended by a limit: OutOfMemory (the OOM killer), PidsLimit (forks refused). */
  outcome?: SandboxOutcome;
  /** Sandboxed and ended: peak memory, CPU time, wall time, PIDs. */
  resources?: ExecutionResources;
}

// ---------------------------------------------------------------------------------------------
// Records

export function newRecordDir(stateDir: string): { id: string; dir: string } {
  // <store>.d and its executions/ must be this user's and private: records are written there.
  ensurePrivateDir(dirname(stateDir));
  ensurePrivateDir(stateDir);
  for (;;) {
    const id = newExecutionId();
    const dir = join(stateDir, id);
    try {
      mkdirSync(dir, { mode: 0o700 });
      return { id, dir };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}

export function readMeta(dir: string): MetaRecord {
  const meta = readJson<MetaRecord>(dir, META);
  if (meta === null) throw new LayerFsError('ERR_NOT_FOUND', `execution record ${dir} has no ${META}`, { path: dir });
  return meta;
}

function ended(meta: MetaRecord, exit: ExitRecord): ExecutionInfo {
  const info: ExecutionInfo = { ...base(meta), state: exit.state, exitCode: exit.exitCode, signal: exit.signal, endedAt: exit.endedAt };
  if (exit.outcome !== undefined) info.outcome = exit.outcome;
  if (exit.resources !== undefined) info.resources = exit.resources;
  return info;
}

export function base(meta: MetaRecord): Omit<ExecutionInfo, 'state' | 'exitCode' | 'signal' | 'endedAt'> {
  return {
    ...(meta.sandbox ? { sandbox: meta.sandbox.name } : {}),
    id: meta.id,
    workspaceId: meta.workspaceId,
    argv: meta.argv,
    cwd: meta.cwd,
    pid: meta.command?.pid ?? null,
    ownerPid: meta.owner.pid,
    detached: meta.detached,
    startedAt: meta.startedAt,
  };
}

export function commandAlive(meta: MetaRecord): boolean {
  return meta.command !== null && isAlive(meta.command);
}

export function infoOf(dir: string, meta: MetaRecord = readMeta(dir)): ExecutionInfo {
  const exit = readJson<ExitRecord>(dir, EXIT);
  if (exit !== null) return ended(meta, exit);
  if (isAlive(meta.owner) || commandAlive(meta)) return { ...base(meta), state: 'running', exitCode: null, signal: null, endedAt: null };
  // The owner may have written exit.json and exited between the first look and now.
  const late = readJson<ExitRecord>(dir, EXIT);
  if (late !== null) return ended(meta, late);
  return { ...base(meta), state: 'lost', exitCode: null, signal: null, endedAt: null };
}

/** Ids of complete records (a directory gets its meta.json right after it is made). */
function recordIds(stateDir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(stateDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new LayerFsError('ERR_NATIVE_IO', `cannot list executions in ${stateDir}`, { path: stateDir, errno: (e as NodeJS.ErrnoException).code, cause: e });
  }
  return names.filter((n) => ID_RE.test(n) && exists(join(stateDir, n), META)).sort();
}

export function resolveRecord(stateDir: string, id: string): string {
  if (typeof id !== 'string' || !/^[0-9a-fA-F]{4,32}$/.test(id)) {
    throw invalidArgument(`${JSON.stringify(id)} is not an execution id`, { id: String(id), hint: 'give at least 4 hex digits' });
  }
  const want = id.toLowerCase();
  const matches = recordIds(resolve(stateDir)).filter((n) => n.startsWith(want));
  if (matches.length === 0) throw new LayerFsError('ERR_NOT_FOUND', `no execution ${id}`, { id, hint: 'list executions to see their ids' });
  if (matches.length > 1) {
    throw new LayerFsError('ERR_AMBIGUOUS_ID', `execution id prefix ${id} matches several executions`, { id, candidates: matches.slice(0, 10), hint: 'give more hex digits' });
  }
  return join(resolve(stateDir), matches[0]!);
}

// ---------------------------------------------------------------------------------------------
// Queries

export function getExecution(stateDir: string, id: string): ExecutionInfo {
  return infoOf(resolveRecord(stateDir, id));
}

/** Every recorded execution (of one Workspace, when given), oldest first. */
export function listExecutions(stateDir: string, workspaceId?: string): ExecutionInfo[] {
  const root = resolve(stateDir);
  const out: ExecutionInfo[] = [];
  for (const id of recordIds(root)) {
    const dir = join(root, id);
    const meta = readJson<MetaRecord>(dir, META);
    if (meta === null) continue; // forgotten meanwhile
    if (workspaceId !== undefined && meta.workspaceId !== workspaceId) continue;
    out.push(infoOf(dir, meta));
  }
  return out;
}

/** Where a Store's execution records live (`<store>.d/executions`): the Client's and the mount daemon's one answer. */
export function executionsDir(storePath: string): string {
  return `${storePath}.d/executions`;
}

/** The Workspace's executions still running: a commit of it must answer Busy while there are any. */
export function runningExecutions(stateDir: string, workspaceId: string): ExecutionInfo[] {
  return listExecutions(stateDir, workspaceId).filter((e) => e.state === 'running');
}

/** Removes the records of a Workspace's ended executions; running ones stay. */
export function forgetExecutions(stateDir: string, workspaceId: string): void {
  const root = resolve(stateDir);
  for (const info of listExecutions(root, workspaceId)) {
    if (info.state !== 'running') rmSync(join(root, info.id), { recursive: true, force: true });
  }
}
