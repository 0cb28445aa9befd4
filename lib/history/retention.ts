/**
 * Retention: which states a Store keeps. `db gc` keeps exactly what these states reach (and the
 * delta bases of that); everything else is garbage. Kept: every Layer of every LayerStack, every
 * Branch's base Layer and head, the Commits the retention policy keeps, every Commit a Branch was
 * forked from, every pin, every open Workspace's base, and every hold (a state an operation
 * spanning several transactions registered; docs/FORMAT.md "Format 4").
 *
 * Workspace rows belong to lib/workspace, a tier above this one: their bases come in as an
 * argument (`workspaceRoots` of lib/workspace reads them), a required one, so no caller can
 * forget them and let gc reclaim what an open Workspace stands on.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { Store } from '../store/store.js';
import type { ReadStore } from '../store/store-read.js';
import { remoteBranchHeads } from './remote-refs.js';
import { ensureHistoryTable, hasHistoryTable, historyColumn, historyRows } from './tables.js';

export interface RetentionPolicy {
  /** Keep at least this many of each Branch's newest Commits (the head included). */
  branchCommits: number | null;
  /** Keep every Commit younger than this many milliseconds. */
  olderThanMs: number | null;
}

/** An open Workspace's base root: what its files matched when created or last committed. */
export interface WorkspaceRoot {
  id: Buffer;
  rootId: Buffer;
}

/** A state retention keeps: `kind:id` names it, `rootId` is what gc walks from. */
export interface KeptState {
  kind: 'layer' | 'commit' | 'pin' | 'workspace' | 'hold';
  id: string;
  rootId: Buffer;
}

export function getPolicy(store: ReadStore): RetentionPolicy {
  const rows = new Map(historyRows<{ key: string; value: number }>(store, 'retention', 'SELECT key, value FROM retention').map((r) => [r.key, r.value]));
  return { branchCommits: rows.get('branch_commits') ?? null, olderThanMs: rows.get('older_than_ms') ?? null };
}

/** Replaces the policy (null clears a rule; both null keeps every Commit, the default). */
export function setPolicy(store: Store, p: RetentionPolicy): RetentionPolicy {
  if (p.branchCommits !== null && !(Number.isSafeInteger(p.branchCommits) && p.branchCommits >= 1)) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `branch-commits must be a whole number of at least 1, got ${p.branchCommits}`, { argument: 'branchCommits', hint: 'a Branch head is always kept' });
  }
  if (p.olderThanMs !== null && !(Number.isSafeInteger(p.olderThanMs) && p.olderThanMs >= 0)) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `older-than must be a non-negative duration, got ${p.olderThanMs}`, { argument: 'olderThan' });
  }
  store.writeSync(() => {
    // The default policy needs no table (a missing one reads as empty).
    if (p.branchCommits === null && p.olderThanMs === null && !hasHistoryTable(store, 'retention')) return;
    ensureHistoryTable(store, 'retention');
    const put = store.db.prepare('INSERT INTO retention (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
    const del = store.db.prepare('DELETE FROM retention WHERE key = ?');
    if (p.branchCommits === null) del.run('branch_commits');
    else put.run('branch_commits', p.branchCommits);
    if (p.olderThanMs === null) del.run('older_than_ms');
    else put.run('older_than_ms', p.olderThanMs);
  });
  return getPolicy(store);
}

interface CommitLink {
  root: Buffer;
  parent: Buffer | null;
  created: number;
}

/** Every Commit row, by id (latin1 key): walking many Branch histories reads each row once. */
function commitLinks(store: ReadStore): Map<string, CommitLink> {
  const m = new Map<string, CommitLink>();
  const q = store.db.prepare('SELECT id, root_id AS root, parent_commit_id AS parent, created_ms AS created FROM commits');
  for (const r of q.iterate() as IterableIterator<CommitLink & { id: Buffer }>) m.set(r.id.toString('latin1'), { root: r.root, parent: r.parent, created: r.created });
  return m;
}

/** Whether the policy keeps the commit at position `index` (0 = head) of a history. */
export function policyKeeps(p: RetentionPolicy, index: number, createdMs: number, now: number): boolean {
  if (index === 0) return true;
  if (p.branchCommits === null && p.olderThanMs === null) return true;
  if (p.branchCommits !== null && index < p.branchCommits) return true;
  return p.olderThanMs !== null && now - createdMs < p.olderThanMs;
}

/** The ids (hex) of the Commits retention keeps: policy, fork bases, and pins of Commits. */
export function keptCommits(store: ReadStore, now = Date.now()): Set<string> {
  return new Set(historyStates(store, now).filter((s) => s.kind === 'commit').map((s) => s.id));
}

/**
 * The states retention keeps right now (module comment), given the open Workspaces' bases.
 * Read both inside one read (or write) transaction: gc calls `roots` again under the write lock
 * before each deleting transaction, e.g. `roots: () => keptStates(s, workspaceRoots(s))`.
 */
export function keptStates(store: ReadStore, workspaces: Iterable<WorkspaceRoot>, now = Date.now()): KeptState[] {
  const out = historyStates(store, now);
  for (const w of workspaces) out.push({ kind: 'workspace', id: toHex(w.id), rootId: w.rootId });
  return out;
}

/** The kept states of the history tier's own tables: every kind but `workspace`. */
function historyStates(store: ReadStore, now: number): KeptState[] {
  const out: KeptState[] = [];
  for (const l of store.db.prepare('SELECT id, root_id AS rootId FROM layers').iterate() as IterableIterator<{ id: Buffer; rootId: Buffer }>) {
    out.push({ kind: 'layer', id: toHex(l.id), rootId: l.rootId });
  }
  const policy = getPolicy(store);
  const links = commitLinks(store);
  const kept = new Set<string>();
  // A Commit gc already reclaimed stays pruned, whatever the policy says now.
  const gone = new Set(historyColumn<Buffer>(store, 'pruned_commits', 'SELECT id FROM pruned_commits').map((b) => b.toString('latin1')));
  const keep = (key: string) => {
    if (kept.has(key) || gone.has(key)) return;
    const c = links.get(key);
    if (!c) return;
    kept.add(key);
    out.push({ kind: 'commit', id: toHex(Buffer.from(key, 'latin1')), rootId: c.root });
  };
  // Local Branch heads, and the remote-tracking heads of fetched or pushed Branches
  // (REMOTE/NAME): their histories are kept the same way.
  const heads = [
    ...(store.db.prepare('SELECT head_commit_id AS head FROM branches WHERE head_commit_id IS NOT NULL').all() as { head: Buffer }[]),
    ...remoteBranchHeads(store).map((head) => ({ head })),
  ];
  for (const b of heads) {
    let key: string | undefined = b.head.toString('latin1');
    for (let i = 0; key !== undefined; i++) {
      const c = links.get(key);
      if (!c) break;
      if (policyKeeps(policy, i, c.created, now)) keep(key);
      key = c.parent?.toString('latin1');
    }
  }
  // Fork bases of existing Branches only: a deleted Branch's fork base is an ordinary Commit.
  for (const f of historyColumn<Buffer>(store, 'fork_bases', 'SELECT commit_id AS c FROM fork_bases JOIN branches ON branches.id = fork_bases.branch_id')) keep(f.toString('latin1'));
  // Checkpoints are named pins of a Branch's state: their Commit, and their root (which
  // outlives the Commit's Branch).
  for (const cp of historyRows<{ branchId: Buffer; name: string; commitId: Buffer | null; rootId: Buffer }>(store, 'checkpoints', 'SELECT branch_id AS branchId, name, commit_id AS commitId, root_id AS rootId FROM checkpoints')) {
    if (cp.commitId) keep(cp.commitId.toString('latin1'));
    out.push({ kind: 'pin', id: `checkpoint:${toHex(cp.branchId)}:${cp.name}`, rootId: cp.rootId });
  }
  for (const p of historyRows<{ state: string; rootId: Buffer }>(store, 'pins', 'SELECT state, root_id AS rootId FROM pins')) {
    out.push({ kind: 'pin', id: p.state, rootId: p.rootId });
  }
  for (const h of historyRows<{ id: Buffer; rootId: Buffer }>(store, 'holds', 'SELECT id, root_id AS rootId FROM holds')) {
    out.push({ kind: 'hold', id: toHex(h.id), rootId: h.rootId });
  }
  return out;
}

/**
 * Records as pruned, inside gc's first deleting transaction, every Commit whose root is not
 * live: gc reclaims its state, and it stays pruned even if the policy later keeps more.
 */
export function recordPruned(store: Store, live: (id: Buffer) => boolean): number {
  const pruned = (store.db.prepare('SELECT id, root_id AS rootId FROM commits').all() as { id: Buffer; rootId: Buffer }[]).filter((c) => !live(c.rootId));
  if (pruned.length === 0) return 0;
  ensureHistoryTable(store, 'pruned_commits');
  const add = store.db.prepare('INSERT OR IGNORE INTO pruned_commits (id, pruned_ms) VALUES (?, ?)');
  const now = Date.now();
  let n = 0;
  for (const c of pruned) n += add.run(c.id, now).changes;
  return n;
}

export function isPruned(store: ReadStore, commitId: Buffer): boolean {
  return historyColumn(store, 'pruned_commits', 'SELECT 1 FROM pruned_commits WHERE id = ?', commitId).length > 0;
}

// ---- pins ----

export interface Pin {
  state: string;
  rootId: Buffer;
  createdMs: number;
}

export function listPins(store: ReadStore): Pin[] {
  return historyRows<Pin>(store, 'pins', 'SELECT state, root_id AS rootId, created_ms AS createdMs FROM pins ORDER BY created_ms, state');
}

/**
 * Pins a state (`kind:hex-id`) whose root is `rootId`; the root must still be in the Store (a
 * state gc already reclaimed cannot come back). Returns whether it was new.
 */
export function addPin(store: Store, state: string, rootId: Buffer): boolean {
  return store.writeSync(() => {
    // A pruned Commit may have lost part of its tree already (gc deletes in several transactions).
    // gc removes the rows of Commits nothing keeps (commit-reclaim.ts): such a Commit is gone too.
    const commit = state.startsWith('commit:') ? Buffer.from(state.slice(7), 'hex') : null;
    const pruned =
      commit !== null && (isPruned(store, commit) || store.db.prepare('SELECT 1 FROM commits WHERE id = ?').get(commit) === undefined);
    if (pruned || !store.objects.has(rootId)) {
      throw new LayerFsError('ERR_PRUNED', `the state ${state} was reclaimed by db gc`, { id: state, hint: 'pin states before deleting or pruning them' });
    }
    ensureHistoryTable(store, 'pins');
    return store.db.prepare('INSERT OR IGNORE INTO pins (state, root_id, created_ms) VALUES (?, ?, ?)').run(state, rootId, Date.now()).changes === 1;
  });
}

export function removePin(store: Store, state: string): boolean {
  return store.writeSync(() => hasHistoryTable(store, 'pins') && store.db.prepare('DELETE FROM pins WHERE state = ?').run(state).changes === 1);
}

// ---- holds ----

/**
 * Registers `rootId` as in use by an operation that spans several write transactions (none does
 * yet: every import and commit writes its objects and publishes them in one). gc keeps what a
 * hold reaches until releaseHold.
 */
export function addHold(store: Store, id: Buffer, rootId: Buffer, purpose: string): void {
  store.writeSync(() => {
    ensureHistoryTable(store, 'holds');
    store.db.prepare('INSERT INTO holds (id, root_id, purpose, created_ms) VALUES (?, ?, ?, ?)').run(id, rootId, purpose, Date.now());
  });
}

export function releaseHold(store: Store, id: Buffer): void {
  store.writeSync(() => {
    if (hasHistoryTable(store, 'holds')) store.db.prepare('DELETE FROM holds WHERE id = ?').run(id);
  });
}
