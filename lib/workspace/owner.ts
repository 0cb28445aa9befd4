/**
 * Owned Workspaces: a Workspace made for one tool call records the process that owns it (pid,
 * /proc start time, boot id). While that process lives, nobody else may end it; once the process
 * is proven gone (SIGKILL, crash, reboot) the Workspace is an orphan and is ended with discard by
 * the next tool call or by `workspace end`. A Workspace handed over to its user (a commit that
 * could not publish) has its owner cleared, so it stays until someone ends it.
 */
import { isAlive, processRef, type ProcessRef } from './exec-records.js';
import { prepared, type MaintenanceClaim, type Store } from '../store/index.js';

export type { ProcessRef };

/** This process, as an owner is recorded. */
export function selfOwner(): ProcessRef {
  return processRef(process.pid);
}

export function setWorkspaceOwner(store: Store, id: Buffer, owner: ProcessRef | null): void {
  prepared(store.db, 'UPDATE workspaces SET owner_pid = ?, owner_start = ?, owner_boot = ? WHERE id = ?').run(owner?.pid ?? null, owner?.startTime ?? null, owner?.bootId ?? null, id);
}

export function workspaceOwner(store: Store, id: Buffer): ProcessRef | null {
  // The mount daemon asks this for each of its mounts every second (fuse/daemon-orphans.ts).
  const r = prepared(store.db, 'SELECT owner_pid AS pid, owner_start AS startTime, owner_boot AS bootId FROM workspaces WHERE id = ?').get(id) as
    | { pid: number | null; startTime: string | null; bootId: string | null }
    | undefined;
  if (!r || r.pid === null) return null;
  return { pid: r.pid, startTime: r.startTime, bootId: r.bootId };
}

/** This process's claim on a Store's maintenance lease (gc, repack): another holder counts as gone once ownerGone says so. */
export function maintenanceClaim(): MaintenanceClaim {
  return { holder: selfOwner(), gone: ownerGone };
}

/** Whether `owner` is this very process (same pid, same start). */
export function isSelf(owner: ProcessRef): boolean {
  const me = selfOwner();
  return owner.pid === me.pid && owner.startTime === me.startTime && owner.bootId === me.bootId;
}

/** Whether the owner is proven gone: not alive, or alive as another process with its pid. */
export function ownerGone(owner: ProcessRef): boolean {
  return !isAlive(owner);
}

/** Ids of the Workspaces whose recorded owner is proven gone. */
export function orphanedWorkspaces(store: Store): Buffer[] {
  const rows = store.db.prepare('SELECT id, owner_pid AS pid, owner_start AS startTime, owner_boot AS bootId FROM workspaces WHERE owner_pid IS NOT NULL').all() as {
    id: Buffer;
    pid: number;
    startTime: string | null;
    bootId: string | null;
  }[];
  return rows.filter((r) => ownerGone({ pid: r.pid, startTime: r.startTime, bootId: r.bootId })).map((r) => r.id);
}

/** `owner` recorded in a directory name, so a projection left before its row existed can be attributed. */
export function ownerTag(owner: ProcessRef): string {
  return `${owner.pid}-${owner.startTime ?? 'x'}`;
}

/** The owner a directory name made by ownerTag() names (the boot id is not in it: this boot's). */
export function parseOwnerTag(name: string): ProcessRef | null {
  const m = /^(\d+)-(\d+|x)-/.exec(name);
  if (!m) return null;
  return { pid: Number(m[1]), startTime: m[2] === 'x' ? null : m[2]!, bootId: null };
}
