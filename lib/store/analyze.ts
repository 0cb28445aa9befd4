/**
 * Dedup analysis: for every state, its logical size (what a full copy would cost) and the
 * canonical bytes it added beyond the states before it, plus Store-wide unique, stored and
 * allocated bytes. Shared subtrees are walked once: a page's totals are memoized by id.
 */
import type { Store } from './store.js';
import { ObjectKind } from './objects.js';
import { LayerFsError } from '../errors.js';
import { decodeExtentNode } from './tree/extents.js';
import { ContentForm, decodeInode, InodeKind, keySerial, type Inode } from './tree/inode.js';
import { decodeNode, TreeKind } from './tree/pages.js';
import { decodeRoot } from './tree/root.js';

export interface StateUsage {
  kind: string;
  id: string;
  /** Sum of the sizes of every file (each name of a hard-linked file counted once per inode). */
  logicalBytes: number;
  files: number;
  /** Canonical bytes of objects this state reaches that no earlier state reached. */
  newBytes: number;
  newObjects: number;
  /** logicalBytes / newBytes (how many times over this state is shared). */
  dedupRatio: number;
}

export interface Contributor {
  state: string;
  serial: number;
  newBytes: number;
}

export interface DedupReport {
  states: StateUsage[];
  logicalBytes: number;
  uniqueBytes: number;
  uniqueObjects: number;
  storedBytes: number;
  allocatedBytes: number;
  fileBytes: number;
  dedupRatio: number;
  largest: Contributor[];
}

interface Totals {
  logical: number;
  files: number;
}

/** Children must be one level down (at most 256 deep, whatever a forged Store chains). */
function below(level: number, parent: number): void {
  if (parent >= 0 && level !== parent - 1) throw new LayerFsError('ERR_CORRUPT', `a tree node of level ${level} under one of level ${parent}`, { hint: 'run layerfs verify' });
}

/** Walks states in order, counting each object once: the first state to reach it is charged. */
class UsageWalk {
  private readonly seen = new Set<string>();
  private readonly pageTotals = new Map<string, Totals>();
  readonly contributors: Contributor[] = [];
  /** Bytes and objects charged to the state being walked. */
  cur = { bytes: 0, objects: 0 };

  constructor(private readonly store: Store) {}

  size(id: Buffer, kind: ObjectKind): number {
    const key = id.toString('latin1');
    if (this.seen.has(key)) return 0;
    this.seen.add(key);
    const loc = this.store.objects.locator(id);
    const n = loc && loc.kind === kind ? loc.size : 0;
    this.cur.bytes += n;
    this.cur.objects++;
    return n;
  }

  private extentBytes(id: Buffer, parent = -1): number {
    if (this.seen.has(id.toString('latin1'))) return 0;
    let n = this.size(id, ObjectKind.Extents);
    const node = decodeExtentNode(this.store.objects.get(id, ObjectKind.Extents), 'extent node');
    below(node.level, parent);
    for (const c of node.ids) n += node.level === 0 ? this.size(c, ObjectKind.Chunk) : this.extentBytes(c, node.level);
    return n;
  }

  private dirBytes(id: Buffer, parent = -1): void {
    if (this.seen.has(id.toString('latin1'))) return;
    this.size(id, ObjectKind.Page);
    const node = decodeNode(TreeKind.Directory, this.store.objects.get(id, ObjectKind.Page), 'page');
    below(node.level, parent);
    if (node.level > 0) for (const c of node.vals) this.dirBytes(c, node.level);
  }

  /** Totals of an inode page's subtree, memoized by page id. */
  inodePage(id: Buffer, state: string, parent = -1): Totals {
    const key = id.toString('latin1');
    const known = this.pageTotals.get(key);
    if (known) return known;
    this.size(id, ObjectKind.Page);
    const node = decodeNode(TreeKind.Inodes, this.store.objects.get(id, ObjectKind.Page), 'page');
    below(node.level, parent);
    const t: Totals = { logical: 0, files: 0 };
    if (node.level > 0) {
      for (const c of node.vals) {
        const sub = this.inodePage(c, state, node.level);
        t.logical += sub.logical;
        t.files += sub.files;
      }
    } else {
      node.keys.forEach((k, i) => {
        const serial = keySerial(k);
        this.inode(decodeInode(node.vals[i]!, serial), serial, state, t);
      });
    }
    this.pageTotals.set(key, t);
    return t;
  }

  private inode(inode: Inode, serial: number, state: string, t: Totals): void {
    if (inode.kind === InodeKind.Dir && inode.form !== ContentForm.None) this.dirBytes(inode.content!);
    if (inode.kind !== InodeKind.File) return;
    t.logical += inode.size;
    t.files++;
    let n = 0;
    if (inode.form === ContentForm.Whole) n = this.size(inode.content!, ObjectKind.Blob);
    else if (inode.form === ContentForm.Extents) n = this.extentBytes(inode.content!);
    if (n > 0) this.contributors.push({ state, serial, newBytes: n });
  }
}

export function analyzeDedup(store: Store, states: { kind: string; id: string; rootId: Buffer }[], fileBytes: number, top = 10): DedupReport {
  const walk = new UsageWalk(store);
  const usage: StateUsage[] = [];
  for (const s of states) {
    walk.cur = { bytes: 0, objects: 0 };
    const label = `${s.kind}:${s.id}`;
    walk.size(s.rootId, ObjectKind.Root);
    const t = walk.inodePage(decodeRoot(store.objects.get(s.rootId, ObjectKind.Root), 'root').inodes, label);
    const cur = walk.cur;
    usage.push({ kind: s.kind, id: s.id, logicalBytes: t.logical, files: t.files, newBytes: cur.bytes, newObjects: cur.objects, dedupRatio: cur.bytes ? t.logical / cur.bytes : Infinity });
  }
  // Stored bytes are the pack rows: members of a compressed group share one row.
  const agg = store.db.prepare('SELECT count(*) AS n, coalesce(sum(size), 0) AS unique_, (SELECT coalesce(sum(length(data)), 0) FROM packs) AS stored FROM objects').get() as { n: number; unique_: number; stored: number };
  const logical = usage.reduce((a, u) => a + u.logicalBytes, 0);
  const contributors = walk.contributors.sort((a, b) => b.newBytes - a.newBytes);
  return {
    states: usage,
    logicalBytes: logical,
    uniqueBytes: agg.unique_,
    uniqueObjects: agg.n,
    storedBytes: agg.stored,
    allocatedBytes: store.allocatedBytes(),
    fileBytes,
    dedupRatio: agg.unique_ ? logical / agg.unique_ : 0,
    largest: contributors.slice(0, top),
  };
}
