/**
 * Branches and Commits. A Branch's state is its head Commit's root, or its base Layer's root
 * before its first Commit. Fork copies no data: it writes one row.
 */
import { LayerFsError } from '../errors.js';
import { checkName } from '../format/names.js';
import { toHex } from '../format/hex.js';
import { prepared } from '../store/store-file.js';
import type { Store } from '../store/store.js';
import type { ReadStore } from '../store/store-read.js';
import { commitIdV2, uuidv7 } from './ids.js';
import { canonicalJson, EMPTY_NOTE, type CommitNote } from './note.js';
import { deletedBranch, deletedError } from './tombstones.js';
import { getLayer } from './layerstacks.js';
import { uniqueByPrefix } from './resolve.js';
import { BRANCH_COLUMNS, COMMIT_COLUMNS, type BranchRow, type CommitRow } from './rows.js';
import { ensureHistoryTable, historyColumn } from './tables.js';

export function getBranch(store: ReadStore, id: Buffer): BranchRow | undefined {
  return prepared(store.db, `SELECT ${BRANCH_COLUMNS} FROM branches WHERE id = ?`).get(id) as BranchRow | undefined;
}

export function getCommit(store: ReadStore, id: Buffer): CommitRow | undefined {
  return prepared(store.db, `SELECT ${COMMIT_COLUMNS} FROM commits WHERE id = ?`).get(id) as CommitRow | undefined;
}

export function listBranches(store: ReadStore, layerStackId?: Buffer): BranchRow[] {
  if (layerStackId) return store.db.prepare(`SELECT ${BRANCH_COLUMNS} FROM branches WHERE layer_stack_id = ? ORDER BY created_ms, name`).all(layerStackId) as BranchRow[];
  return store.db.prepare(`SELECT ${BRANCH_COLUMNS} FROM branches ORDER BY created_ms, name`).all() as BranchRow[];
}

/** A Branch by name (unique per LayerStack; ambiguous across stacks) or by id prefix. */
export function resolveBranch(store: ReadStore, ref: string): BranchRow {
  const byName = store.db.prepare(`SELECT ${BRANCH_COLUMNS} FROM branches WHERE name = ? ORDER BY id`).all(ref) as BranchRow[];
  if (byName.length > 1) {
    const candidates = byName.map((b) => toHex(b.id));
    throw new LayerFsError('ERR_AMBIGUOUS_ID', `several LayerStacks have a Branch named ${ref}: ${candidates.join(', ')}`, { name: ref, candidates, hint: 'give the Branch id (or a prefix) instead' });
  }
  if (byName[0]) return byName[0];
  const id = uniqueByPrefix(ref, 16, 'Branch', (lo, hi, limit) => store.db.prepare('SELECT id FROM branches WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?').pluck().all(lo, hi, limit) as Buffer[]);
  const row = id && getBranch(store, id);
  if (!row) {
    const gone = deletedBranch(store, ref);
    if (gone) throw deletedError(gone);
    const isStack = store.db.prepare('SELECT 1 FROM layer_stacks WHERE name = ?').get(ref) !== undefined;
    const hint = isStack
      ? `${ref} is a LayerStack, not a Branch: see its Layers with \`layerfs query layers --layerstack ${ref}\`, its Branches with \`layerfs query branches --layerstack ${ref}\`, or fork one with \`layerfs branch fork --name NAME --layer ${ref}\``
      : 'list them with `layerfs query branches`';
    throw new LayerFsError('ERR_NOT_FOUND', `no Branch named or with id ${JSON.stringify(ref)}`, { id: ref, hint });
  }
  return row;
}

export function resolveCommit(store: ReadStore, ref: string): CommitRow | undefined {
  const id = uniqueByPrefix(ref, 32, 'Commit', (lo, hi, limit) => store.db.prepare('SELECT id FROM commits WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?').pluck().all(lo, hi, limit) as Buffer[]);
  return id ? getCommit(store, id) : undefined;
}

/** The root a Branch currently exposes. */
export function branchRoot(store: ReadStore, b: BranchRow): Buffer {
  if (b.headCommitId) return getCommit(store, b.headCommitId)!.rootId;
  return getLayer(store, b.baseLayerId)!.rootId;
}

/** The Branch's Commits, newest first (following parents from the head). */
export function branchLog(store: ReadStore, b: BranchRow, limit = Number.MAX_SAFE_INTEGER): CommitRow[] {
  const out: CommitRow[] = [];
  let id = b.headCommitId;
  while (id && out.length < limit) {
    const c = getCommit(store, id);
    if (!c) throw new LayerFsError('ERR_CORRUPT', `Commit ${toHex(id)} is missing`, { id: toHex(id) });
    out.push(c);
    id = c.parentCommitId;
  }
  return out;
}

export function isInHistory(store: ReadStore, b: BranchRow, commit: Buffer): boolean {
  let id = b.headCommitId;
  while (id) {
    if (id.equals(commit)) return true;
    id = getCommit(store, id)?.parentCommitId ?? null;
  }
  return false;
}

export type ForkSource = { layer: Buffer } | { branch: BranchRow; commit: Buffer };

export function forkBranch(store: Store, name: string, source: ForkSource): BranchRow {
  checkName(name, 'Branch');
  return store.writeSync(() => {
    let stackId: Buffer;
    let base: Buffer;
    let head: Buffer | null = null;
    if ('layer' in source) {
      const layer = getLayer(store, source.layer);
      if (!layer) throw new LayerFsError('ERR_NOT_FOUND', `no Layer ${toHex(source.layer)}`, { id: toHex(source.layer) });
      stackId = layer.layerStackId;
      base = layer.id;
    } else {
      const b = getBranch(store, source.branch.id)!;
      if (!isInHistory(store, b, source.commit)) {
        throw new LayerFsError('ERR_NOT_FOUND', `Commit ${toHex(source.commit)} is not in the history of Branch ${b.name}`, { id: toHex(source.commit), hint: 'see `layerfs log BRANCH`' });
      }
      if (historyColumn(store, 'pruned_commits', 'SELECT 1 FROM pruned_commits WHERE id = ?', source.commit).length > 0) {
        throw new LayerFsError('ERR_PRUNED', `the state of Commit ${toHex(source.commit)} was reclaimed by db gc`, { id: toHex(source.commit), hint: 'fork from a Commit retention keeps (see `layerfs log BRANCH`)' });
      }
      stackId = b.layerStackId;
      base = getCommit(store, source.commit)!.baseLayerId;
      head = source.commit;
    }
    if (store.db.prepare('SELECT 1 FROM branches WHERE layer_stack_id = ? AND name = ?').get(stackId, name)) {
      throw new LayerFsError('ERR_NAME_TAKEN', `a Branch named ${name} already exists in this LayerStack`, { name, hint: 'choose another name' });
    }
    const id = uuidv7();
    store.db.prepare('INSERT INTO branches (id, layer_stack_id, name, base_layer_id, head_commit_id, created_ms) VALUES (?, ?, ?, ?, ?, ?)').run(id, stackId, name, base, head, Date.now());
    // Retention always keeps the Commit a Branch was forked from (retention.ts).
    if (head) {
      ensureHistoryTable(store, 'fork_bases');
      store.db.prepare('INSERT INTO fork_bases (branch_id, commit_id) VALUES (?, ?)').run(id, head);
    }
    return getBranch(store, id)!;
  });
}

export type PublishOutcome =
  | { outcome: 'Created'; commit: CommitRow; previousHead: Buffer | null }
  | { outcome: 'UpToDate'; head: Buffer | null }
  | { outcome: 'HeadMoved'; expected: Buffer | null; actual: Buffer | null };

/**
 * Publishes `root` as the Branch's next Commit, inside the caller's write transaction, by
 * compare-and-swap on the head: it moves only if the head is still `expectedHead` (and the base
 * still `expectedBase`). The objects `root` reaches must already be written. The note (message,
 * metadata, author) and the creation time are part of the new Commit's id.
 */
export function publishCommit(store: ReadStore, branchId: Buffer, root: Buffer, expectedHead: Buffer | null, expectedBase: Buffer, note: CommitNote = EMPTY_NOTE): PublishOutcome {
  const b = getBranch(store, branchId);
  if (!b) throw new LayerFsError('ERR_NOT_FOUND', `the Branch ${toHex(branchId)} no longer exists`, { id: toHex(branchId) });
  const sameHead = (b.headCommitId === null && expectedHead === null) || (b.headCommitId !== null && expectedHead !== null && b.headCommitId.equals(expectedHead));
  if (!sameHead || !b.baseLayerId.equals(expectedBase)) return { outcome: 'HeadMoved', expected: expectedHead, actual: b.headCommitId };
  if (branchRoot(store, b).equals(root)) return { outcome: 'UpToDate', head: b.headCommitId };
  const createdMs = Date.now();
  const metadata = note.metadata === null ? null : canonicalJson(note.metadata);
  const id = commitIdV2(root, expectedHead, expectedBase, createdMs, note.author, note.message, metadata ?? '');
  // Statements of the commit path are prepared once per connection (many commits per process).
  prepared(store.db, 'INSERT OR IGNORE INTO commits (id, root_id, parent_commit_id, base_layer_id, created_ms, message, metadata, author, id_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 2)').run(id, root, expectedHead, expectedBase, createdMs, note.message, metadata, note.author);
  const r = prepared(store.db, 'UPDATE branches SET head_commit_id = ? WHERE id = ? AND head_commit_id IS ? AND base_layer_id = ?').run(id, branchId, expectedHead, expectedBase);
  if (r.changes !== 1) return { outcome: 'HeadMoved', expected: expectedHead, actual: getBranch(store, branchId)?.headCommitId ?? null };
  return { outcome: 'Created', commit: getCommit(store, id)!, previousHead: expectedHead };
}
