/**
 * Deleting and renaming Branches and LayerStacks. A deletion leaves a tombstone (kind, id, name,
 * LayerStack, last head, when), so a later `log` or query of the name says it was deleted and
 * when, instead of "not found". Deleting rows frees nothing by itself: `db gc` reclaims the
 * objects no kept state reaches any more.
 *
 * A deletion refuses while a Workspace is open on a Branch it removes. Workspace rows belong to
 * lib/workspace, a tier above: the caller passes `openOn` (lib/workspace `openWorkspacesOn`),
 * which is asked inside the deleting transaction, so no Workspace can open in between.
 */
import { LayerFsError } from '../errors.js';
import { checkName } from '../format/names.js';
import { toHex } from '../format/hex.js';
import type { Store } from '../store/store.js';
import type { ReadStore } from '../store/store-read.js';
import { idsWithPrefix } from './resolve.js';
import type { BranchRow, LayerStackRow } from './rows.js';
import { ensureHistoryTable, hasHistoryTable, historyRows } from './tables.js';

export interface Tombstone {
  kind: 'branch' | 'layerstack';
  id: Buffer;
  name: string;
  layerStackId: Buffer;
  layerStack: string;
  /** The Branch's head Commit (or the LayerStack's head Layer) when it was deleted. */
  headId: Buffer | null;
  deletedMs: number;
}

const COLUMNS = 'kind, id, name, layer_stack_id AS layerStackId, layer_stack AS layerStack, head_id AS headId, deleted_ms AS deletedMs';

/** The latest tombstone of a Branch by name, or by id (or unambiguous prefix of one). */
export function deletedBranch(store: ReadStore, ref: string): Tombstone | undefined {
  if (!hasHistoryTable(store, 'tombstones')) return undefined;
  const byName = store.db.prepare(`SELECT ${COLUMNS} FROM tombstones WHERE kind = 'branch' AND name = ? ORDER BY deleted_ms DESC LIMIT 1`).get(ref) as Tombstone | undefined;
  if (byName) return byName;
  if (!/^[0-9a-fA-F]{4,32}$/.test(ref)) return undefined;
  const ids = idsWithPrefix(ref.toLowerCase(), 16, 2, (lo, hi, limit) => store.db.prepare('SELECT id FROM tombstones WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?').pluck().all(lo, hi, limit) as Buffer[]);
  if (ids.length !== 1) return undefined;
  return store.db.prepare(`SELECT ${COLUMNS} FROM tombstones WHERE kind = 'branch' AND id = ?`).get(ids[0]) as Tombstone | undefined;
}

/** The latest tombstone of a LayerStack by name. */
export function deletedLayerStack(store: ReadStore, name: string): Tombstone | undefined {
  if (!hasHistoryTable(store, 'tombstones')) return undefined;
  return store.db.prepare(`SELECT ${COLUMNS} FROM tombstones WHERE kind = 'layerstack' AND name = ? ORDER BY deleted_ms DESC LIMIT 1`).get(name) as Tombstone | undefined;
}

export function listTombstones(store: ReadStore): Tombstone[] {
  return historyRows<Tombstone>(store, 'tombstones', `SELECT ${COLUMNS} FROM tombstones ORDER BY deleted_ms, name`);
}

export function deletedError(t: Tombstone): LayerFsError {
  const when = new Date(t.deletedMs).toISOString();
  const what = t.kind === 'branch' ? 'Branch' : 'LayerStack';
  return new LayerFsError('ERR_DELETED', `${what} ${t.name} (${toHex(t.id)}) was deleted at ${when}`, {
    name: t.name,
    id: toHex(t.id),
    deletedAt: when,
    head: t.headId ? toHex(t.headId) : null,
    hint: 'its Commits stay readable until `layerfs db gc` reclaims them; pin one to keep it',
  });
}

function tombstone(store: Store, t: Omit<Tombstone, 'deletedMs'>, now: number): void {
  ensureHistoryTable(store, 'tombstones');
  store.db
    .prepare('INSERT OR REPLACE INTO tombstones (kind, id, name, layer_stack_id, layer_stack, head_id, deleted_ms) VALUES (?, ?, ?, ?, ?, ?, ?)')
    .run(t.kind, t.id, t.name, t.layerStackId, t.layerStack, t.headId, now);
}

/** The open Workspaces (hex ids) on any of these Branches. */
export type OpenWorkspacesOn = (branchIds: readonly Buffer[]) => string[];

function busy(what: string, workspaces: string[], hint: string): LayerFsError {
  return new LayerFsError('ERR_BUSY', `${what} has open Workspaces: ${workspaces.join(', ')}`, { workspaces, hint });
}

/**
 * Deletes a Branch row (its Commits stay as rows; retention no longer keeps them) and leaves a
 * tombstone, inside one write transaction. Refuses (ERR_BUSY) while a Workspace is open on it:
 * the caller ends them first.
 */
export function deleteBranchRow(store: Store, branchId: Buffer, openOn: OpenWorkspacesOn): Tombstone {
  return store.writeSync(() => {
    const b = store.db.prepare('SELECT id, name, layer_stack_id AS layerStackId, head_commit_id AS headCommitId FROM branches WHERE id = ?').get(branchId) as
      | Pick<BranchRow, 'id' | 'name' | 'layerStackId' | 'headCommitId'>
      | undefined;
    if (!b) throw new LayerFsError('ERR_NOT_FOUND', `the Branch ${toHex(branchId)} no longer exists`, { id: toHex(branchId) });
    const ws = openOn([b.id]);
    if (ws.length > 0) throw busy(`Branch ${b.name}`, ws, 'end them (`layerfs workspace end`), or delete with --force');
    const stack = store.db.prepare('SELECT name FROM layer_stacks WHERE id = ?').pluck().get(b.layerStackId) as string;
    const now = Date.now();
    if (hasHistoryTable(store, 'fork_bases')) store.db.prepare('DELETE FROM fork_bases WHERE branch_id = ?').run(b.id);
    // A Branch's checkpoints name it: they go with it (pin a state to keep it past the Branch).
    if (hasHistoryTable(store, 'checkpoints')) store.db.prepare('DELETE FROM checkpoints WHERE branch_id = ?').run(b.id);
    store.db.prepare('DELETE FROM branches WHERE id = ?').run(b.id);
    const t = { kind: 'branch' as const, id: b.id, name: b.name, layerStackId: b.layerStackId, layerStack: stack, headId: b.headCommitId };
    tombstone(store, t, now);
    return { ...t, deletedMs: now };
  });
}

export function renameBranch(store: Store, branchId: Buffer, name: string): BranchRow {
  checkName(name, 'Branch');
  return store.writeSync(() => {
    const b = store.db.prepare('SELECT layer_stack_id FROM branches WHERE id = ?').pluck().get(branchId) as Buffer | undefined;
    if (!b) throw new LayerFsError('ERR_NOT_FOUND', `the Branch ${toHex(branchId)} no longer exists`, { id: toHex(branchId) });
    const other = store.db.prepare('SELECT id FROM branches WHERE layer_stack_id = ? AND name = ?').pluck().get(b, name) as Buffer | undefined;
    if (other && !other.equals(branchId)) throw new LayerFsError('ERR_NAME_TAKEN', `a Branch named ${name} already exists in this LayerStack`, { name, hint: 'choose another name' });
    store.db.prepare('UPDATE branches SET name = ? WHERE id = ?').run(name, branchId);
    return store.db.prepare('SELECT id, layer_stack_id AS layerStackId, name, base_layer_id AS baseLayerId, head_commit_id AS headCommitId, created_ms AS createdMs FROM branches WHERE id = ?').get(branchId) as BranchRow;
  });
}

/**
 * Deletes a LayerStack with its Layers, Branches and their Commits, leaving tombstones for the
 * LayerStack and each Branch, in one write transaction. Refuses (ERR_BUSY) while any Workspace
 * is open on one of its Branches.
 */
export function deleteLayerStackRows(store: Store, stackId: Buffer, openOn: OpenWorkspacesOn): { layerStack: Tombstone; branches: Tombstone[]; layers: number; commits: number } {
  return store.writeSync(() => {
    const s = store.db.prepare('SELECT id, name, head_layer_id AS headLayerId FROM layer_stacks WHERE id = ?').get(stackId) as Pick<LayerStackRow, 'id' | 'name' | 'headLayerId'> | undefined;
    if (!s) throw new LayerFsError('ERR_NOT_FOUND', `the LayerStack ${toHex(stackId)} no longer exists`, { id: toHex(stackId) });
    const branches = store.db.prepare('SELECT id, name, head_commit_id AS headCommitId FROM branches WHERE layer_stack_id = ?').all(s.id) as Pick<BranchRow, 'id' | 'name' | 'headCommitId'>[];
    const ws = openOn(branches.map((b) => b.id));
    if (ws.length > 0) throw busy(`LayerStack ${s.name}`, ws, 'end them first (`layerfs workspace end`)');
    const now = Date.now();
    const stones = branches.map((b) => ({ kind: 'branch' as const, id: b.id, name: b.name, layerStackId: s.id, layerStack: s.name, headId: b.headCommitId, deletedMs: now }));
    for (const t of stones) tombstone(store, t, now);
    const stackStone = { kind: 'layerstack' as const, id: s.id, name: s.name, layerStackId: s.id, layerStack: s.name, headId: s.headLayerId, deletedMs: now };
    tombstone(store, stackStone, now);
    // Foreign keys decide the order: Branches name Commits, Commits name Layers, Layers the stack.
    if (hasHistoryTable(store, 'fork_bases')) store.db.prepare('DELETE FROM fork_bases WHERE branch_id IN (SELECT id FROM branches WHERE layer_stack_id = ?)').run(s.id);
    if (hasHistoryTable(store, 'checkpoints')) store.db.prepare('DELETE FROM checkpoints WHERE branch_id IN (SELECT id FROM branches WHERE layer_stack_id = ?)').run(s.id);
    store.db.prepare('DELETE FROM branches WHERE layer_stack_id = ?').run(s.id);
    const commits = store.db.prepare('DELETE FROM commits WHERE base_layer_id IN (SELECT id FROM layers WHERE layer_stack_id = ?)').run(s.id).changes;
    const layers = store.db.prepare('DELETE FROM layers WHERE layer_stack_id = ?').run(s.id).changes;
    store.db.prepare('DELETE FROM layer_stacks WHERE id = ?').run(s.id);
    return { layerStack: stackStone, branches: stones, layers, commits };
  });
}
