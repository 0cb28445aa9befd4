/**
 * History rows the remote tier writes: rows a fetch received, stored as they are (their ids
 * were re-derived by the caller, lib/remote/fetch.ts, before anything is written), and the head
 * of a Branch whose Commits a reconciling push replayed. Every function runs inside the
 * caller's write transaction, after the objects the rows reach are stored.
 */
import type { Store } from '../store/store.js';
import type { BranchRow, CommitRow, LayerRow, LayerStackRow } from './rows.js';

/** A LayerStack new to this Store, with the id and head the remote gave it. */
export function insertReceivedLayerStack(store: Store, st: LayerStackRow): void {
  store.db.prepare('INSERT INTO layer_stacks (id, name, head_layer_id, created_ms) VALUES (?, ?, ?, ?)').run(st.id, st.name, st.headLayerId, st.createdMs);
}

/** Layers not stored yet (known ones are left as they are); answers how many were new. */
export function insertReceivedLayers(store: Store, layers: readonly LayerRow[]): number {
  const insert = store.db.prepare('INSERT OR IGNORE INTO layers (id, layer_stack_id, seq, parent_layer_id, root_id, source_branch_id, source_commit_id, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  let n = 0;
  for (const l of layers) n += insert.run(l.id, l.layerStackId, l.seq, l.parentLayerId, l.rootId, l.sourceBranchId, l.sourceCommitId, l.createdMs).changes;
  return n;
}

/** Fast-forwards a LayerStack to a head Layer the caller checked is a descendant of its own. */
export function fastForwardLayerStack(store: Store, id: Buffer, head: Buffer): void {
  store.db.prepare('UPDATE layer_stacks SET head_layer_id = ? WHERE id = ?').run(head, id);
}

/**
 * Commits not stored yet, parents first (the caller's order), each only when its base Layer is
 * stored; answers how many were new.
 */
export function insertReceivedCommits(store: Store, commits: readonly CommitRow[]): number {
  const insert = store.db.prepare(
    'INSERT OR IGNORE INTO commits (id, root_id, parent_commit_id, base_layer_id, created_ms, message, metadata, author, id_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const hasLayer = store.db.prepare('SELECT 1 FROM layers WHERE id = ?').pluck();
  let n = 0;
  for (const c of commits) if (hasLayer.get(c.baseLayerId)) n += insert.run(c.id, c.rootId, c.parentCommitId, c.baseLayerId, c.createdMs, c.message, c.metadata, c.author, c.idVersion).changes;
  return n;
}

/** Whether the LayerStack `layerStackId` has a Branch named `name`. */
export function branchNameTaken(store: Store, layerStackId: Buffer, name: string): boolean {
  return store.db.prepare('SELECT 1 FROM branches WHERE layer_stack_id = ? AND name = ?').get(layerStackId, name) !== undefined;
}

/** A Branch new to this Store, with the id, base and head the remote gave it. */
export function insertReceivedBranch(store: Store, b: BranchRow): void {
  store.db.prepare('INSERT INTO branches (id, layer_stack_id, name, base_layer_id, head_commit_id, created_ms) VALUES (?, ?, ?, ?, ?, ?)').run(b.id, b.layerStackId, b.name, b.baseLayerId, b.headCommitId, b.createdMs);
}

/** Tests for a stored Layer and a stored Commit (a fetch skips the objects of those). */
export function knownHistory(store: Store): { layer: (id: Buffer) => boolean; commit: (id: Buffer) => boolean } {
  const layer = store.db.prepare('SELECT 1 FROM layers WHERE id = ?').pluck();
  const commit = store.db.prepare('SELECT 1 FROM commits WHERE id = ?').pluck();
  return { layer: (id) => layer.get(id) !== undefined, commit: (id) => commit.get(id) !== undefined };
}

/** A replayed Commit (its id derived by the caller: version 2, note and time included). */
export function insertReplayedCommit(store: Store, c: Omit<CommitRow, 'idVersion'>): void {
  store.db
    .prepare('INSERT OR IGNORE INTO commits (id, root_id, parent_commit_id, base_layer_id, created_ms, message, metadata, author, id_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 2)')
    .run(c.id, c.rootId, c.parentCommitId, c.baseLayerId, c.createdMs, c.message, c.metadata, c.author);
}

/** Moves a Branch's head from `from` to `to` by compare-and-swap; false when it had moved. */
export function swapBranchHead(store: Store, branchId: Buffer, from: Buffer | null, to: Buffer | null): boolean {
  return store.db.prepare('UPDATE branches SET head_commit_id = ? WHERE id = ? AND head_commit_id IS ?').run(to, branchId, from).changes === 1;
}
