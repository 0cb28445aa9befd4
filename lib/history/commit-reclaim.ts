/**
 * Commit rows nothing keeps, removed by `db gc` so a Store stays the size of what it keeps.
 *
 * A Commit row stays while something names it: a Branch head and every Commit of its history (a
 * Commit the policy pruned included: `log` walks it and marks it pruned), the head and history of
 * a remote-tracking Branch, the fork base of an existing Branch, a pinned Commit, a checkpoint's
 * Commit, the Commit a Layer was added from, and the ancestors of all of these (a Commit names its
 * parent, and its id covers it). Every other row belongs to deleted Branches (or to a deleted
 * Branch's history no one forked from): gc has reclaimed its state, and its Branch's tombstone
 * keeps saying when it was deleted.
 *
 * Removal runs in write transactions of at most `batch` rows, each computing what is kept anew
 * under the write lock (a fetch or pin in between may name a row again). A Commit's children
 * are removed before it (deepest first): `parent_commit_id` is a foreign key, so no transaction
 * ever leaves a row naming a removed parent, and a crash between two leaves a valid Store.
 */
import type { Store } from '../store/store.js';
import { hasHistoryTable, historyColumn } from './tables.js';

interface Link {
  id: Buffer;
  parent: Buffer | null;
}

const key = (b: Buffer) => b.toString('latin1');

/** The Commits that name rows kept (module comment), before their ancestors are added. */
function keptTips(store: Store): Buffer[] {
  const db = store.db;
  const tips: Buffer[] = [
    ...(db.prepare('SELECT head_commit_id FROM branches WHERE head_commit_id IS NOT NULL').pluck().all() as Buffer[]),
    ...(historyColumn(store, 'remote_refs', "SELECT head FROM remote_refs WHERE kind = 'branch' AND head IS NOT NULL") as Buffer[]),
    ...(historyColumn(store, 'fork_bases', 'SELECT commit_id FROM fork_bases') as Buffer[]),
    ...(historyColumn(store, 'checkpoints', 'SELECT commit_id FROM checkpoints WHERE commit_id IS NOT NULL') as Buffer[]),
    ...(db.prepare('SELECT source_commit_id FROM layers WHERE source_commit_id IS NOT NULL').pluck().all() as Buffer[]),
  ];
  for (const state of historyColumn(store, 'pins', "SELECT state FROM pins WHERE state LIKE 'commit:%'") as string[]) tips.push(Buffer.from(state.slice(7), 'hex'));
  return tips;
}

/**
 * The Commit rows nothing keeps, deepest first (a Commit after every Commit whose history holds
 * it). Read inside a transaction.
 */
export function unreachableCommits(store: Store): Buffer[] {
  const links = new Map<string, Link>();
  for (const r of store.db.prepare('SELECT id, parent_commit_id AS parent FROM commits').iterate() as IterableIterator<Link>) links.set(key(r.id), r);
  const kept = new Set<string>();
  for (const tip of keptTips(store)) {
    for (let k: string | undefined = key(tip); k !== undefined && !kept.has(k); ) {
      const l = links.get(k);
      if (!l) break;
      kept.add(k);
      k = l.parent ? key(l.parent) : undefined;
    }
  }
  const depth = new Map<string, number>();
  const depthOf = (k: string): number => {
    const path: string[] = [];
    let d = 0;
    for (let at: string | undefined = k; at !== undefined; ) {
      const known = depth.get(at);
      if (known !== undefined) {
        d = known + 1;
        break;
      }
      path.push(at);
      const p: Buffer | null | undefined = links.get(at)?.parent;
      at = p ? key(p) : undefined;
    }
    for (let i = path.length - 1; i >= 0; i--, d++) depth.set(path[i]!, d);
    return depth.get(k)!;
  };
  const out: { id: Buffer; depth: number }[] = [];
  for (const [k, l] of links) if (!kept.has(k)) out.push({ id: l.id, depth: depthOf(k) });
  return out.sort((a, b) => b.depth - a.depth).map((c) => c.id);
}

/** How many Commit rows gc would remove (a dry run). */
export function countUnreachableCommits(store: Store): number {
  return store.read(() => unreachableCommits(store).length);
}

/**
 * Removes at most `batch` Commit rows nothing keeps, deepest first, with their `pruned_commits`
 * rows, inside the caller's write transaction (gc runs one per batch); returns how many (0: none left).
 */
export function removeUnreachableCommits(store: Store, batch: number): number {
  const ids = unreachableCommits(store).slice(0, batch);
  const del = store.db.prepare('DELETE FROM commits WHERE id = ?');
  const unprune = hasHistoryTable(store, 'pruned_commits') ? store.db.prepare('DELETE FROM pruned_commits WHERE id = ?') : undefined;
  for (const id of ids) {
    unprune?.run(id);
    del.run(id);
  }
  return ids.length;
}
