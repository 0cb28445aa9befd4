/**
 * Sandboxes: create, status, stop, remove, and the plan an execution of a sandboxed Workspace
 * launches with. The profile lives in the Store (sandbox-rows.ts); the cgroup lives in the
 * kernel and is (re)created from the profile whenever it is missing (after `sandbox stop`, or a
 * reboot), so a Sandbox that exists can always apply its limits or refuse to run.
 */
import { existsSync } from 'node:fs';
import { toHex } from '../format/hex.js';
import type { Store } from '../store/index.js';
import { applySandboxCgroup, cgroupBase, childSet, currentUse, killAll, removeSet, type CgroupSet } from './cgroup.js';
import { listWorkspaces, type WorkspaceRow } from './rows.js';
import { ensureMaskFile, probeBwrap, type SandboxPlan } from './sandbox-launch.js';
import {
  checkProfile,
  deleteSandbox,
  insertSandbox,
  listSandboxes,
  newSandboxId,
  resolveSandbox,
  sandboxNameTaken,
  workspacesInSandbox,
  type SandboxProfile,
  type SandboxProfileInput,
  type SandboxRow,
} from './sandbox-rows.js';
import { LayerFsError } from '../errors.js';
import { checkName } from '../format/names.js';

export interface SandboxState {
  name: string;
  id: string;
  profile: SandboxProfile;
  createdAt: string;
  /** 'ready': its cgroup exists; 'stopped': it is made again by the next execution. */
  state: 'ready' | 'stopped';
  cgroupVersion: 1 | 2;
  /** Its cgroup directories (one per hierarchy on v1). */
  cgroups: string[];
  /** What runs in it now (null when stopped). */
  use: { memoryBytes: number | null; pids: number | null; cpuMs: number | null } | null;
  /** Workspaces (ids) whose executions run in it. */
  workspaces: string[];
}

function cgroupOf(base: CgroupSet, row: { id: Buffer }): CgroupSet {
  return childSet(base, `sbx-${toHex(row.id)}`);
}

/** Creates the profile and its cgroup; ERR_SANDBOX_UNAVAILABLE (nothing recorded) when either cannot be had. */
export function createSandbox(store: Store, name: string, input: SandboxProfileInput): SandboxState {
  checkName(name, 'Sandbox');
  const profile = checkProfile(input);
  if (sandboxNameTaken(store, name)) throw new LayerFsError('ERR_NAME_TAKEN', `a Sandbox named ${name} exists`, { name, hint: 'pick another name, or remove that Sandbox' });
  probeBwrap();
  const base = cgroupBase();
  const id = newSandboxId();
  const set = cgroupOf(base, { id });
  applySandboxCgroup(base, set, profile);
  let row: SandboxRow;
  try {
    row = insertSandbox(store, id, name, profile);
  } catch (e) {
    void removeSet(set).catch(() => undefined);
    throw e;
  }
  return stateOf(store, row, base);
}

function stateOf(store: Store, row: SandboxRow, base: CgroupSet | null): SandboxState {
  const set = base ? cgroupOf(base, row) : null;
  const use = set ? currentUse(set) : null;
  return {
    name: row.name,
    id: toHex(row.id),
    profile: row.profile,
    createdAt: new Date(row.createdMs).toISOString(),
    state: use === null ? 'stopped' : 'ready',
    cgroupVersion: set?.version ?? 1,
    cgroups: set?.dirs ?? [],
    use,
    workspaces: workspacesInSandbox(store, row),
  };
}

function baseOrNull(): CgroupSet | null {
  try {
    return cgroupBase();
  } catch {
    return null;
  }
}

/** One Sandbox, or every one. */
export function sandboxStates(store: Store, name?: string): SandboxState[] {
  const base = baseOrNull();
  const rows = name === undefined ? listSandboxes(store) : [resolveSandbox(store, name)];
  return rows.map((r) => stateOf(store, r, base));
}

/** Kills everything running in the Sandbox and removes its cgroup; the profile stays. */
export async function stopSandbox(store: Store, name: string): Promise<{ outcome: 'Stopped' | 'AlreadyStopped'; killed: number }> {
  const row = resolveSandbox(store, name);
  const base = cgroupBase();
  const set = cgroupOf(base, row);
  if (currentUse(set) === null) return { outcome: 'AlreadyStopped', killed: 0 };
  const killed = await killAll(set);
  await removeSet(set);
  return { outcome: 'Stopped', killed };
}

/** Stops the Sandbox and deletes its profile; ERR_BUSY while Workspaces run in it. */
export async function removeSandbox(store: Store, name: string): Promise<{ outcome: 'Removed'; killed: number }> {
  const row = resolveSandbox(store, name);
  const users = workspacesInSandbox(store, row);
  if (users.length > 0) {
    throw new LayerFsError('ERR_BUSY', `Sandbox ${name} is used by ${users.length} Workspace(s)`, { name, workspaces: users, hint: 'end those Workspaces first' });
  }
  const base = baseOrNull();
  let killed = 0;
  if (base) {
    const set = cgroupOf(base, row);
    if (currentUse(set) !== null) {
      killed = await killAll(set);
      await removeSet(set);
    }
  }
  deleteSandbox(store, row);
  return { outcome: 'Removed', killed };
}

/**
 * The launch plan for an execution of Workspace `w` in Sandbox `row`: its cgroup made (again)
 * with the profile's limits, and every path it must not see.
 */
export function sandboxPlan(store: Store, row: SandboxRow, w: WorkspaceRow): SandboxPlan {
  const base = cgroupBase();
  const set = cgroupOf(base, row);
  // Its limits were written when the cgroup was made; only a missing one (stopped, rebooted) is made again.
  if (!existsSync(set.dirs[0]!)) applySandboxCgroup(base, set, row.profile);
  const stateRoot = `${store.path}.d`;
  const others = listWorkspaces(store).filter((o) => !o.id.equals(w.id)).map((o) => o.path);
  return {
    name: row.name,
    profile: row.profile,
    cgroup: set,
    workspace: w.path,
    masked: [store.path, `${store.path}-wal`, `${store.path}-shm`, `${store.path}-journal`, stateRoot, ...others],
    maskFile: ensureMaskFile(`${stateRoot}/sandbox`),
  };
}
