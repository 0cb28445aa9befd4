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

export async function findMissing(roots: Buffer[], source: TreeSource, holder: Holder): Promise<Missing> {
  const seen = new Set<string>();
  const children = new Map<string, ChildRef[]>();
  const missing = new Set<string>();
  const present = new Set<string>();
  let frontier: ChildRef[] = [];
  for (const id of roots) {
    if (seen.has(keyOf(id))) continue;
    seen.add(keyOf(id));
    frontier.push({ id, kind: ObjectKind.Root });
  }
  const top = frontier.slice();
  let queries = 0;
  let asked = 0;
  while (frontier.length > 0) {
    const absent: ChildRef[] = [];
    for (let i = 0; i < frontier.length; i += NEGOTIATION_BATCH) {
      const part = frontier.slice(i, i + NEGOTIATION_BATCH);
      const held = await holder.has(part.map((r) => r.id));
      queries++;
      asked += part.length;
      for (const r of part) {
        if (held.has(keyOf(r.id))) present.add(keyOf(r.id));
        else {
          absent.push(r);
          missing.add(keyOf(r.id));
        }
      }
    }
    const trees = absent.filter((r) => isTree(r.kind));
    const next: ChildRef[] = [];
    for (let i = 0; i < trees.length; i += NEGOTIATION_BATCH) {
      const part = trees.slice(i, i + NEGOTIATION_BATCH);
      const data = await source.trees(part);
      for (const r of part) {
        const kids = childrenOf(r.kind, data.get(keyOf(r.id))!, r.id);
        children.set(keyOf(r.id), kids);
        for (const k of kids) {
          if (seen.has(keyOf(k.id))) continue;
          seen.add(keyOf(k.id));
          next.push(k);
        }
      }
    }
    frontier = next;
  }
  return { order: postOrder(top, children, missing), asked, present, queries };
}

/** The missing objects, each after every missing object below it. */
function postOrder(top: ChildRef[], children: Map<string, ChildRef[]>, missing: Set<string>): ChildRef[] {
  const out: ChildRef[] = [];
  const done = new Set<string>();
  for (const root of top) {
    if (!missing.has(keyOf(root.id)) || done.has(keyOf(root.id))) continue;
    const kidsOf = (r: ChildRef) => children.get(keyOf(r.id)) ?? [];
    const stack: { ref: ChildRef; kids: ChildRef[]; next: number }[] = [{ ref: root, kids: kidsOf(root), next: 0 }];
    while (stack.length > 0) {
      const f = stack[stack.length - 1]!;
      if (f.next < f.kids.length) {
        const k = f.kids[f.next++]!;
        const key = keyOf(k.id);
        if (missing.has(key) && !done.has(key)) {
          done.add(key);
          stack.push({ ref: k, kids: kidsOf(k), next: 0 });
        }
        continue;
      }
      out.push(f.ref);
      stack.pop();
    }
  }
  return out;
}
