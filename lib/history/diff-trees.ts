/**
 * Difference of two canonical page trees (inode tables or directory name trees). Pages are
 * content-addressed and a tree's shape depends only on its key set, so two subtrees that start
 * at the same key with the same page id hold exactly the same entries: the walk skips them
 * without loading them. The work is proportional to the pages that differ (times the depth),
 * not to the size of the trees.
 */
import type { PageIO, TreeKind } from '../store/tree/pages.js';
import { compareBytes } from '../format/compare.js';

/** One key whose value differs: `before` absent = added, `after` absent = removed. */
export interface TreeChange {
  key: Buffer;
  before: Buffer | undefined;
  after: Buffer | undefined;
}

/** A pending item of one side, in key order: a not-yet-loaded subtree or a level-0 entry. */
interface Item {
  key: Buffer;
  /** Subtree page id; undefined for an entry. */
  id: Buffer | undefined;
  /** Level of the subtree's page (entries: -1). */
  level: number;
  /** Entry value (subtrees: unused). */
  value: Buffer | undefined;
}

/** The pending items of one side, smallest key on top (at the end of the array). */
class Side {
  readonly stack: Item[] = [];

  constructor(
    private readonly kind: TreeKind,
    private readonly io: PageIO,
    root: Buffer | null,
  ) {
    if (root) this.open(root);
  }

  top(): Item | undefined {
    return this.stack[this.stack.length - 1];
  }

  /** Replaces the top subtree by its children (or entries). */
  expandTop(): void {
    this.open(this.stack.pop()!.id!);
  }

  private open(id: Buffer): void {
    const node = this.io.load(this.kind, id);
    const leaf = node.level === 0;
    for (let i = node.keys.length - 1; i >= 0; i--) {
      const key = node.keys[i]!;
      const v = node.vals[i]!;
      this.stack.push(leaf ? { key, id: undefined, level: -1, value: v } : { key, id: v, level: node.level - 1, value: undefined });
    }
  }
}

/**
 * Yields, in key order, every key whose value differs between the tree at `before` and the tree
 * at `after` (null = empty tree). With one side empty this lists the other side's entries.
 */
export function* diffTrees(kind: TreeKind, io: PageIO, before: Buffer | null, after: Buffer | null): Generator<TreeChange> {
  if (before && after && before.equals(after)) return;
  const a = new Side(kind, io, before);
  const b = new Side(kind, io, after);
  for (;;) {
    const x = a.top();
    const y = b.top();
    if (!x && !y) return;
    if (!y || (x && compareBytes(x.key, y.key) < 0)) {
      // Keys below everything left in `after`: only in `before`.
      if (x!.id) a.expandTop();
      else {
        a.stack.pop();
        yield { key: x!.key, before: x!.value, after: undefined };
      }
      continue;
    }
    if (!x || compareBytes(x.key, y.key) > 0) {
      if (y.id) b.expandTop();
      else {
        b.stack.pop();
        yield { key: y.key, before: undefined, after: y.value };
      }
      continue;
    }
    const change = sameKey(a, b, x, y);
    if (change) yield change;
  }
}

/**
 * Both sides start with one key: equal pages or entries are dropped (a change when two entries
 * differ); otherwise the higher subtree is opened (both when they are at the same level) until
 * the two sides line up on equal pages or reach entries.
 */
function sameKey(a: Side, b: Side, x: Item, y: Item): TreeChange | undefined {
  if (x.id && y.id && x.id.equals(y.id)) {
    a.stack.pop();
    b.stack.pop();
    return undefined;
  }
  if (!x.id && !y.id) {
    a.stack.pop();
    b.stack.pop();
    return x.value!.equals(y.value!) ? undefined : { key: x.key, before: x.value, after: y.value };
  }
  const ex = x.id !== undefined && (y.id === undefined || x.level >= y.level);
  const ey = y.id !== undefined && (x.id === undefined || y.level >= x.level);
  if (ex) a.expandTop();
  if (ey) b.expandTop();
  return undefined;
}
