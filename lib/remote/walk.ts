/**
 * Negotiation: which objects of some states the receiver lacks. States are walked from their
 * roots breadth-first, one batch query per level (and per BATCH ids); an object the receiver
 * holds is not opened, because a receiver holds an object only with everything below it (both
 * sides store in post-order, children first, each batch in one transaction). The result lists
 * the missing objects in post-order, the order they must be stored in.
 */
import { childrenOf, ObjectKind, type ChildRef } from '../store/index.js';

/** Ids per presence query. */
export const NEGOTIATION_BATCH = 4096;

export interface Holder {
  /** Which of `ids` the receiver holds (latin1 keys). */
  has(ids: Buffer[]): Promise<Set<string>>;
}

export interface TreeSource {
  /** Canonical, authenticated bytes of tree objects (roots, pages, extent nodes). */
  trees(refs: ChildRef[]): Promise<Map<string, Buffer>>;
}

export interface Missing {
  /** Objects the receiver lacks, children before parents. */
  order: ChildRef[];
  /** Ids the receiver was asked about, and which of them it holds. */
  asked: number;
  present: Set<string>;
  queries: number;
}

const isTree = (k: number) => k === ObjectKind.Root || k === ObjectKind.Page || k === ObjectKind.Extents;
export const keyOf = (id: Buffer) => id.toString('latin1');

/** One object met by the walk, its key computed once. */
interface WalkNode {
  ref: ChildRef;
  key: string;
  missing: boolean;
  kids?: WalkNode[];
}

/** A walk's `meet`: the node of `ref` (one per object), pushed onto `into` when first met. */
function meeter(seen: Map<string, WalkNode>): (ref: ChildRef, into: WalkNode[]) => WalkNode {
  return (ref, into) => {
    const key = keyOf(ref.id);
    let n = seen.get(key);
    if (!n) {
      n = { ref, key, missing: false };
      seen.set(key, n);
      into.push(n);
    }
    return n;
  };
}

export async function findMissing(roots: Buffer[], source: TreeSource, holder: Holder): Promise<Missing> {
  const seen = new Map<string, WalkNode>();
  const present = new Set<string>();
  const meet = meeter(seen);
  let frontier: WalkNode[] = [];
  const top = roots.map((id) => meet({ id, kind: ObjectKind.Root }, frontier));
  let queries = 0;
  let asked = 0;
  while (frontier.length > 0) {
    const trees: WalkNode[] = [];
    for (let i = 0; i < frontier.length; i += NEGOTIATION_BATCH) {
      const part = frontier.slice(i, i + NEGOTIATION_BATCH);
      const held = await holder.has(part.map((n) => n.ref.id));
      queries++;
      asked += part.length;
      for (const n of part) {
        if (held.has(n.key)) present.add(n.key);
        else {
          n.missing = true;
          if (isTree(n.ref.kind)) trees.push(n);
        }
      }
    }
    const next: WalkNode[] = [];
    for (let i = 0; i < trees.length; i += NEGOTIATION_BATCH) {
      const part = trees.slice(i, i + NEGOTIATION_BATCH);
      const data = await source.trees(part.map((n) => n.ref));
      for (const n of part) n.kids = childrenOf(n.ref.kind, data.get(n.key)!, n.ref.id).map((k) => meet(k, next));
    }
    frontier = next;
  }
  return { order: postOrder(top), asked, present, queries };
}

/** Tree objects the local walk may open before it gives up (the remote walk takes over). */
export const LOCAL_WALK_LIMIT = 8192;

/**
 * Negotiation without the receiver: `known` are roots of states the receiver holds whole (the
 * remote heads this push starts from, which the Store holds too), so every object below them is
 * there. Both sides are walked level by level from their roots, each opening only what the
 * other side has not met: the new states' objects not met below `known` are the missing ones.
 * An object met on both sides at different depths (a tree that grew or shrank a level) is at
 * worst sent again (the receiver keeps its copy), never skipped wrongly: only objects met below
 * `known` count as held. More than LOCAL_WALK_LIMIT trees opened: undefined (walk the remote).
 */
export async function findMissingLocally(roots: Buffer[], known: Buffer[], source: TreeSource): Promise<Missing | undefined> {
  const seen = new Map<string, WalkNode>();
  const held = new Set<string>();
  const meet = meeter(seen);
  const meetHeld = (ref: ChildRef, into: ChildRef[]) => {
    const key = keyOf(ref.id);
    if (held.has(key)) return;
    held.add(key);
    into.push(ref);
  };
  let frontier: WalkNode[] = [];
  const top = roots.map((id) => meet({ id, kind: ObjectKind.Root }, frontier));
  let old: ChildRef[] = [];
  for (const id of known) meetHeld({ id, kind: ObjectKind.Root }, old);
  let opened = 0;
  // The old side is walked only as far as the new side needs it: once no new object is left to
  // classify, what remains below the known roots is not opened.
  while (frontier.length > 0) {
    // The new side first: what the old side has met so far is held; the rest is opened.
    const trees = frontier.filter((n) => !held.has(n.key) && isTree(n.ref.kind));
    opened += trees.length;
    const next: WalkNode[] = [];
    const newData = await source.trees(trees.map((n) => n.ref));
    for (const n of trees) n.kids = childrenOf(n.ref.kind, newData.get(n.key)!, n.ref.id).map((k) => meet(k, next));
    // Then the old side, which opens only what the new side has not met (down to this level's children).
    const oldTrees = old.filter((r) => isTree(r.kind) && !seen.has(keyOf(r.id)));
    opened += oldTrees.length;
    if (opened > LOCAL_WALK_LIMIT) return undefined;
    const oldNext: ChildRef[] = [];
    const oldData = await source.trees(oldTrees);
    for (const r of oldTrees) for (const k of childrenOf(r.kind, oldData.get(keyOf(r.id))!, r.id)) meetHeld(k, oldNext);
    frontier = next;
    old = oldNext;
  }
  for (const n of seen.values()) n.missing = !held.has(n.key);
  return { order: postOrder(top), asked: 0, present: held, queries: 0 };
}

/** The missing objects, each after every missing object below it. */
function postOrder(top: WalkNode[]): ChildRef[] {
  const out: ChildRef[] = [];
  const done = new Set<WalkNode>();
  for (const root of top) {
    if (!root.missing || done.has(root)) continue;
    done.add(root);
    const stack: { node: WalkNode; next: number }[] = [{ node: root, next: 0 }];
    while (stack.length > 0) {
      const f = stack[stack.length - 1]!;
      const kids = f.node.kids ?? [];
      if (f.next < kids.length) {
        const k = kids[f.next++]!;
        if (k.missing && !done.has(k)) {
          done.add(k);
          stack.push({ node: k, next: 0 });
        }
        continue;
      }
      out.push(f.node.ref);
      stack.pop();
    }
  }
  return out;
}
