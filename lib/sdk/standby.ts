/**
 * Standby Workspaces for tool calls: with `standby`, a call that ends leaves one fresh owned
 * Workspace of the same Branch head ready (made in the background, while the agent thinks), so
 * the next call skips the mount or the materialize, and its own Workspace is ended in the
 * background once its outcome is settled. A standby is used only if the Branch head is
 * still the one it was made from; otherwise it is discarded and a fresh one made. Standbys are
 * owned by this process like any tool call's Workspace: if the process dies they are orphans,
 * ended by the next call.
 */
import { toHex } from '../format/hex.js';
import { getBranch, type BranchRow } from '../history/index.js';
import type { Store } from '../store/store.js';
import { getWorkspace, type WorkspaceRow } from '../workspace/index.js';
import type { ToolCallHost } from './tool-call-host.js';

type Spare = Promise<string | null>;

const spares = new WeakMap<ToolCallHost, Map<string, Spare>>();
/** Ends of finished calls' Workspaces still under way (standby mode ends them in the background). */
const ending = new WeakMap<ToolCallHost, Set<Promise<void>>>();

/**
 * Runs the end of a finished call's Workspace in the background: its outcome is settled (kept
 * work is committed, the rest was not asked for), so the call need not wait for the unmount or
 * the removal. endStandbys() waits for these; if the process dies first, the Workspace is an
 * orphan, ended by the next call.
 */
export function endInBackground(client: ToolCallHost, end: () => Promise<unknown>): void {
  let set = ending.get(client);
  if (!set) ending.set(client, (set = new Set()));
  const p: Promise<void> = end().then(
    () => void set.delete(p),
    () => void set.delete(p),
  );
  set.add(p);
}

function key(branch: BranchRow, projection: string): string {
  return `${toHex(branch.id)}:${projection}`;
}

function table(client: ToolCallHost): Map<string, Spare> {
  let t = spares.get(client);
  if (!t) spares.set(client, (t = new Map()));
  return t;
}

/** The ready standby of this Branch head, or null (a stale one is discarded). */
export async function takeStandby(client: ToolCallHost, store: Store, branch: BranchRow, projection: string): Promise<WorkspaceRow | null> {
  const t = table(client);
  const k = key(branch, projection);
  const spare = t.get(k);
  if (!spare) return null;
  t.delete(k);
  const id = await spare;
  if (id === null) return null;
  const row = getWorkspace(store, Buffer.from(id, 'hex'));
  const b = getBranch(store, branch.id);
  const same = (x: Buffer | null, y: Buffer | null) => (x === null ? y === null : y !== null && x.equals(y));
  if (row && b && same(row.expectedHeadId, b.headCommitId) && row.expectedBaseId.equals(b.baseLayerId)) return row;
  if (row) await client.endWorkspace(id, { discard: true }).catch(() => {});
  return null;
}

/** Starts making the next standby of the Branch head (errors only mean there is none). */
export function prepareStandby(client: ToolCallHost, branch: BranchRow, projection: string, make: () => Promise<WorkspaceRow>): void {
  const t = table(client);
  const k = key(branch, projection);
  if (t.has(k)) return;
  t.set(
    k,
    make().then(
      (w) => toHex(w.id),
      () => null,
    ),
  );
}

/** Ends every standby of this Client, after the background ends of finished calls (before closing it). */
export async function endStandbys(client: ToolCallHost): Promise<void> {
  await Promise.all(ending.get(client) ?? []);
  const t = spares.get(client);
  if (!t) return;
  const ids = await Promise.all(t.values());
  t.clear();
  for (const id of ids) if (id !== null) await client.endWorkspace(id, { discard: true }).catch(() => {});
}
