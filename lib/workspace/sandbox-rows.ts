/**
 * Sandbox rows: a Sandbox is a named profile (limits, extra mounts, network) kept in the Store
 * so every process that runs a Workspace's commands applies the same one, and the link from a
 * Workspace to the Sandbox its executions run in (docs/FORMAT.md, format step "Sandboxes").
 */
import { isAbsolute, resolve } from 'node:path';
import { LayerFsError, invalidArgument } from '../errors.js';
import { checkName } from '../format/names.js';
import { toHex } from '../format/hex.js';
import { uuidv7 } from '../history/index.js';
import type { Store } from '../store/index.js';
import { ensureWorkspaceTable, workspaceRows } from './tables.js';

export type SandboxNetwork = 'none' | 'host';

/** What a Sandbox allows; null limits are not set (the cgroup still accounts for them). */
export interface SandboxProfile {
  memoryMib: number | null;
  /** CPU time per wall second, in CPUs (1.5 = one and a half cores). */
  cpus: number | null;
  pidsLimit: number | null;
  /** Cap on the Workspace's disk use while a sandboxed command runs. */
  diskMib: number | null;
  network: SandboxNetwork;
  /** Host paths visible read-only inside (besides the system directories). */
  ro: string[];
  /** Host paths visible read-write inside (besides the Workspace). */
  rw: string[];
}

export interface SandboxRow {
  id: Buffer;
  name: string;
  profile: SandboxProfile;
  createdMs: number;
}

export type SandboxProfileInput = Partial<SandboxProfile>;

/** Without --pids-limit a Sandbox still stops a fork bomb. */
export const DEFAULT_PIDS_LIMIT = 4096;

function positive(v: unknown, what: string, integer: boolean): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || (integer && !Number.isInteger(v))) {
    throw invalidArgument(`${what} must be a positive ${integer ? 'integer' : 'number'}, not ${JSON.stringify(v)}`, { hint: `give ${what} as ${integer ? 'a whole number' : 'a number'} above 0` });
  }
  return v;
}

function paths(v: unknown, what: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw invalidArgument(`${what} must be an array of absolute paths`);
  return v.map((p: unknown) => {
    if (typeof p !== 'string' || p === '' || p.includes('\0')) throw invalidArgument(`${what} path ${JSON.stringify(p)} is not a path`);
    if (!isAbsolute(p)) throw invalidArgument(`${what} path ${p} is not absolute`, { path: p, hint: 'give absolute paths' });
    return resolve(p);
  });
}

/** Validates a profile, filling defaults. */
export function checkProfile(input: SandboxProfileInput): SandboxProfile {
  if (input === null || typeof input !== 'object') throw invalidArgument('a Sandbox profile must be an object');
  const network = input.network ?? 'none';
  if (network !== 'none' && network !== 'host') throw invalidArgument(`network must be none or host, not ${JSON.stringify(network)}`, { hint: '--network none|host' });
  const memoryMib = positive(input.memoryMib, 'memoryMib', true);
  if (memoryMib !== null && memoryMib < 8) throw invalidArgument(`memoryMib ${memoryMib} is too small to start a process`, { hint: 'give at least 8 MiB' });
  return {
    memoryMib,
    cpus: positive(input.cpus, 'cpus', false),
    pidsLimit: positive(input.pidsLimit, 'pidsLimit', true) ?? DEFAULT_PIDS_LIMIT,
    diskMib: positive(input.diskMib, 'diskMib', true),
    network,
    ro: paths(input.ro, 'ro'),
    rw: paths(input.rw, 'rw'),
  };
}

interface RawRow {
  id: Buffer;
  name: string;
  profile: string;
  createdMs: number;
}

const COLUMNS = 'id, name, profile, created_ms AS createdMs';

function fromRaw(r: RawRow): SandboxRow {
  let profile: SandboxProfile;
  try {
    profile = checkProfile(JSON.parse(r.profile) as SandboxProfileInput);
  } catch (e) {
    throw new LayerFsError('ERR_CORRUPT', `Sandbox ${r.name} has an unreadable profile`, { name: r.name, cause: e, hint: 'remove the Sandbox and create it again' });
  }
  return { id: r.id, name: r.name, profile, createdMs: r.createdMs };
}

export function newSandboxId(): Buffer {
  return uuidv7();
}

export function insertSandbox(store: Store, id: Buffer, name: string, profile: SandboxProfile): SandboxRow {
  checkName(name, 'Sandbox');
  const row: SandboxRow = { id, name, profile, createdMs: Date.now() };
  store.writeSync(() => {
    ensureWorkspaceTable(store, 'sandboxes');
    if (store.db.prepare('SELECT 1 FROM sandboxes WHERE name = ?').get(name)) {
      throw new LayerFsError('ERR_NAME_TAKEN', `a Sandbox named ${name} exists`, { name, hint: 'pick another name, or remove that Sandbox' });
    }
    store.db.prepare('INSERT INTO sandboxes (id, name, profile, created_ms) VALUES (?, ?, ?, ?)').run(row.id, name, JSON.stringify(profile), row.createdMs);
  });
  return row;
}

export function sandboxNameTaken(store: Store, name: string): boolean {
  return workspaceRows(store, 'sandboxes', 'SELECT 1 FROM sandboxes WHERE name = ?', name).length > 0;
}

export function listSandboxes(store: Store): SandboxRow[] {
  return workspaceRows<RawRow>(store, 'sandboxes', `SELECT ${COLUMNS} FROM sandboxes ORDER BY name`).map(fromRaw);
}

export function findSandbox(store: Store, name: string): SandboxRow | null {
  const r = workspaceRows<RawRow>(store, 'sandboxes', `SELECT ${COLUMNS} FROM sandboxes WHERE name = ?`, name)[0];
  return r ? fromRaw(r) : null;
}

export function resolveSandbox(store: Store, name: string): SandboxRow {
  const r = typeof name === 'string' ? findSandbox(store, name) : null;
  if (!r) throw new LayerFsError('ERR_NOT_FOUND', `no Sandbox named ${JSON.stringify(name)}`, { name: String(name), hint: 'list them with `layerfs sandbox status`' });
  return r;
}

/** The Sandbox a Workspace's executions run in, or null. */
export function sandboxOfWorkspace(store: Store, workspaceId: Buffer): SandboxRow | null {
  const sql = `SELECT s.id, s.name, s.profile, s.created_ms AS createdMs FROM workspace_sandboxes w JOIN sandboxes s ON s.id = w.sandbox_id WHERE w.workspace_id = ?`;
  const r = workspaceRows<RawRow>(store, 'workspace_sandboxes', sql, workspaceId)[0];
  return r ? fromRaw(r) : null;
}

export function attachSandbox(store: Store, workspaceId: Buffer, sandbox: SandboxRow): void {
  store.writeSync(() => {
    ensureWorkspaceTable(store, 'workspace_sandboxes');
    store.db.prepare('INSERT OR REPLACE INTO workspace_sandboxes (workspace_id, sandbox_id) VALUES (?, ?)').run(workspaceId, sandbox.id);
  });
}

/** Workspace ids (hex) that run in the Sandbox. */
export function workspacesInSandbox(store: Store, sandbox: SandboxRow): string[] {
  return workspaceRows<{ id: Buffer }>(store, 'workspace_sandboxes', 'SELECT workspace_id AS id FROM workspace_sandboxes WHERE sandbox_id = ?', sandbox.id).map((r) => toHex(r.id));
}

/** Deletes the row; refuses while Workspaces run in it. */
export function deleteSandbox(store: Store, sandbox: SandboxRow): void {
  store.writeSync(() => {
    const users = workspacesInSandbox(store, sandbox);
    if (users.length > 0) {
      throw new LayerFsError('ERR_BUSY', `Sandbox ${sandbox.name} is used by ${users.length} Workspace(s)`, { name: sandbox.name, workspaces: users, hint: 'end those Workspaces first' });
    }
    store.db.prepare('DELETE FROM sandboxes WHERE id = ?').run(sandbox.id);
  });
}
