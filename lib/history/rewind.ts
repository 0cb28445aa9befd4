/**
 * Rewind and checkpoints. A rewind publishes a new Commit on top of the head whose tree is an
 * older state's, so history only grows: the head never moves backwards and every Commit made
 * since stays reachable (and can be rewound to in turn). A checkpoint is a named pin of a
 * Branch's state at one moment (its head Commit, or its base Layer before any Commit).
 */
import { LayerFsError } from '../errors.js';
import { checkName } from '../format/names.js';
import { toHex } from '../format/hex.js';
import type { Store } from '../store/store.js';
import type { ReadStore } from '../store/store-read.js';
import { branchRoot, getBranch, isInHistory, publishCommit, resolveCommit, type PublishOutcome } from './branches.js';
import { getLayer, layerIdByPrefix } from './layerstacks.js';
import type { CommitNote } from './note.js';
import type { BranchRow } from './rows.js';
import { ensureHistoryTable, historyRows } from './tables.js';

export interface CheckpointRow {
  branchId: Buffer;
  name: string;
  commitId: Buffer | null;
  baseLayerId: Buffer;
  rootId: Buffer;
  createdMs: number;
}

const CHECKPOINT_COLUMNS = 'branch_id AS branchId, name, commit_id AS commitId, base_layer_id AS baseLayerId, root_id AS rootId, created_ms AS createdMs';

export function getCheckpoint(store: ReadStore, branchId: Buffer, name: string): CheckpointRow | undefined {
  return historyRows<CheckpointRow>(store, 'checkpoints', `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE branch_id = ? AND name = ?`, branchId, name)[0];
}

/** Checkpoints named `name`, on any Branch, with their Branch's name (by Branch name). */
export function findCheckpoints(store: ReadStore, name: string): (CheckpointRow & { branchName: string })[] {
  const cols = CHECKPOINT_COLUMNS.replace(/(^|, )/g, '$1c.');
  return historyRows<CheckpointRow & { branchName: string }>(store, 'checkpoints', `SELECT ${cols}, b.name AS branchName FROM checkpoints c JOIN branches b ON b.id = c.branch_id WHERE c.name = ? ORDER BY b.name, b.id`, name);
}

export function listCheckpoints(store: ReadStore, branchId: Buffer): CheckpointRow[] {
  return historyRows<CheckpointRow>(store, 'checkpoints', `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE branch_id = ? ORDER BY created_ms, name`, branchId);
}

/** Pins the Branch's current state under `name` (unique per Branch). */
export function createCheckpoint(store: Store, branch: BranchRow, name: string): CheckpointRow {
  checkName(name, 'checkpoint');
  return store.writeSync(() => {
    const b = getBranch(store, branch.id);
    if (!b) throw new LayerFsError('ERR_NOT_FOUND', `the Branch ${branch.name} no longer exists`, { id: toHex(branch.id) });
    if (getCheckpoint(store, b.id, name)) {
      throw new LayerFsError('ERR_NAME_TAKEN', `Branch ${b.name} already has a checkpoint named ${name}`, { name, hint: 'choose another name; checkpoints are never moved' });
    }
    ensureHistoryTable(store, 'checkpoints');
    store.db
      .prepare('INSERT INTO checkpoints (branch_id, name, commit_id, base_layer_id, root_id, created_ms) VALUES (?, ?, ?, ?, ?, ?)')
      .run(b.id, name, b.headCommitId, b.baseLayerId, branchRoot(store, b), Date.now());
    return getCheckpoint(store, b.id, name)!;
  });
}

export interface RewindTarget {
  kind: 'checkpoint' | 'commit' | 'layer';
  /** The Commit or Layer id the state belongs to. */
  id: Buffer;
  rootId: Buffer;
  checkpoint?: string;
}

/**
 * What a Branch may be rewound to: one of its checkpoints (by name), a Commit of its history (id
 * or prefix), or its base Layer (the state before its first Commit).
 */
export function resolveRewindTarget(store: ReadStore, b: BranchRow, ref: string): RewindTarget {
  if (typeof ref !== 'string' || ref === '') throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give the Commit, checkpoint or base Layer to rewind to');
  // The kind prefixes of state references (checkpoint:, commit:, layer:) say which one is meant;
  // bare, the Branch's own checkpoints come first, as they always did.
  const m = /^(checkpoint|commit|layer):(.+)$/.exec(ref);
  const kind = m?.[1];
  let name = m?.[2] ?? ref;
  if (kind === 'checkpoint' && name.includes('/')) {
    const owner = name.slice(0, name.lastIndexOf('/'));
    if (owner !== b.name && !toHex(b.id).startsWith(owner.toLowerCase())) {
      throw new LayerFsError('ERR_INVALID_ARGUMENT', `${ref} is a checkpoint of another Branch: a rewind goes back to a state of Branch ${b.name}'s own history`, { id: ref, hint: `fork from it instead: layerfs branch fork --name NAME --commit ${ref}` });
    }
    name = name.slice(name.lastIndexOf('/') + 1);
  }
  const cp = kind === undefined || kind === 'checkpoint' ? getCheckpoint(store, b.id, name) : undefined;
  if (cp) return { kind: 'checkpoint', id: cp.commitId ?? cp.baseLayerId, rootId: cp.rootId, checkpoint: cp.name };
  const hex = /^[0-9a-f]+$/i.test(name);
  const layer = hex && kind !== 'checkpoint' && kind !== 'commit' ? layerIdByPrefix(store, name) : undefined;
  if (layer && layer.equals(b.baseLayerId)) return { kind: 'layer', id: layer, rootId: getLayer(store, layer)!.rootId };
  const c = hex && kind !== 'checkpoint' && kind !== 'layer' ? resolveCommit(store, name) : undefined;
  if (c && isInHistory(store, b, c.id)) return { kind: 'commit', id: c.id, rootId: c.rootId };
  throw new LayerFsError('ERR_NOT_FOUND', `${JSON.stringify(ref)} is no checkpoint, Commit or base Layer of Branch ${b.name}`, {
    id: ref,
    hint: `see \`layerfs log ${b.name}\` and \`layerfs checkpoints ${b.name}\``,
  });
}

/**
 * Publishes, in one write transaction, a Commit whose tree is the target's on top of the current
 * head: UpToDate when the Branch already shows that tree.
 */
export function rewindBranch(store: Store, branch: BranchRow, ref: string, note: CommitNote): { target: RewindTarget; published: Exclude<PublishOutcome, { outcome: 'HeadMoved' }> } {
  return store.writeSync(() => {
    const b = getBranch(store, branch.id);
    if (!b) throw new LayerFsError('ERR_NOT_FOUND', `the Branch ${branch.name} no longer exists`, { id: toHex(branch.id) });
    const target = resolveRewindTarget(store, b, ref);
    const published = publishCommit(store, b.id, target.rootId, b.headCommitId, b.baseLayerId, note);
    // Under the write lock the head cannot move between the read and the publish.
    if (published.outcome === 'HeadMoved') throw new LayerFsError('ERR_CORRUPT', 'the Branch head moved inside a write transaction', { id: toHex(b.id) });
    return { target, published };
  });
}

