/**
 * Mounts whose owner died. A Workspace made for one tool call records the process that owns it;
 * once that process is proven gone (SIGKILL; a host that kills its agent's server a few seconds
 * after closing the session) its uncommitted work is discarded by whoever ends it. The daemon
 * ends such a mount itself, so a dead owner leaves no mount (and no row) behind for long; the
 * next tool call's sweep still ends what the daemon did not see (a Workspace whose daemon died too).
 * A Workspace with a running execution is left to that sweep, which stops the execution first.
 */
import type { Store } from '../store/index.js';
import { executionsDir, forgetFuseWorkspace, getWorkspace, ownerGone, runningExecutions, workspaceOwner } from '../workspace/index.js';

/** How often the daemon looks for mounts whose owner died. */
export const ORPHAN_POLL_MS = 1000;

/** Of the served Workspaces, those whose recorded owner is proven gone and in which nothing runs. */
export function orphanedMounts(store: Store, served: Iterable<string>): string[] {
  const out: string[] = [];
  for (const id of served) {
    const owner = workspaceOwner(store, Buffer.from(id, 'hex'));
    if (owner && ownerGone(owner) && runningExecutions(executionsDir(store.path), id).length === 0) out.push(id);
  }
  return out;
}

/** Forgets a FUSE Workspace the daemon has just unmounted: its row, its marker, the mount point it made. */
export function forgetUnmounted(store: Store, id: string): void {
  const row = getWorkspace(store, Buffer.from(id, 'hex'));
  if (row && row.projection === 'fuse') forgetFuseWorkspace(store, row, executionsDir(store.path));
}
