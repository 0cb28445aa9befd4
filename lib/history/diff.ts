/**
 * Diff of two filesystem states, like `git diff --name-status -M`, computed from the page trees
 * in time proportional to the change rather than to the size of the trees.
 *
 * How it works:
 * 1. The two inode tables are walked in parallel, skipping subtrees with equal page ids: this
 *    gives the serials whose record was added, removed or changed.
 * 2. Serials are turned into paths through `parents` (up to the root) and a reverse name map per
 *    directory (built by scanning that directory once, lazily, shared by both states when the
 *    directory's name tree is the same).
 * 3. A path can only change in two ways: the same serial sits at the path in both states and its
 *    record changed (found in step 1), or some directory that is at the same path in both states
 *    binds one of its names differently. The second case is found by diffing the name trees of
 *    directories whose name tree changed (again skipping equal pages) and walking down in
 *    lockstep, but only through names bound to different serials; a name bound on one side only
 *    lists its whole subtree (added or deleted).
 * 4. Renames pair deleted and added paths: first by serial (serials follow inodes), then by file
 *    content id. Serials are trusted as identities unless the diff shows that the two states
 *    number their inodes independently (two separate imports): a serial whose kind changed, or an
 *    unchanged file at an unchanged path under a different serial whose old serial still exists
 *    (or whose new serial already existed). Then only content-based pairing is used.
 */
import { LayerFsError } from '../errors.js';
import { decodeInode, INODE_KIND_NAMES, InodeKind, keySerial, type Inode } from '../store/tree/inode.js';
import { TreeKind, type PageIO } from '../store/tree/pages.js';
import type { Store } from '../store/store.js';
import { changedFields, sameContent, type ChangedField } from './diff-fields.js';
import { corrupt, decodeDirSerial, dirContent, joinPath, NameIndex, sameId, State, type NameSource } from './diff-state.js';
import { diffTrees } from './diff-trees.js';

export { changedFields, type ChangedField } from './diff-fields.js';

export type ChangeKind = 'added' | 'deleted' | 'modified' | 'renamed';
export type EntryKind = 'file' | 'dir' | 'symlink' | 'fifo' | 'chardev' | 'blockdev';

export interface DiffEntry {
  change: ChangeKind;
  /** '/'-joined, relative to the root ('' is the root itself), UTF-8 (lossy) for display. */
  path: string;
  /** The exact name bytes of `path`. */
  pathBytes: Buffer;
  /** renamed only: where the entry was. */
  oldPath?: string;
  oldPathBytes?: Buffer;
  /** Kind in the new state (the old state for deleted). */
  kind: EntryKind;
  /** What changed, for modified and renamed entries; [] otherwise. */
  fields: ChangedField[];
  /** Serial in the new state (the old state for deleted). */
  serial: number;
  /** Files and symlinks: size in the new state (the old state for deleted). */
  size?: number;
  /** Files and symlinks, modified or renamed: size in the old state. */
  oldSize?: number;
}

export interface DiffPage {
  entries: DiffEntry[];
  /** Opaque cursor for the next page; absent on the last page. */
  next?: string;
  /** Number of entries of the whole diff, over all pages. */
  total: number;
}

export interface DiffOptions {
  /** Cursor from the previous page's `next`. */
  after?: string;
  /** Entries per page; default 1000. */
  limit?: number;
}

const DEFAULT_LIMIT = 1000;
const SLASH = 0x2f;
const KIND_NAMES: Record<InodeKind, EntryKind> = INODE_KIND_NAMES;

/**
 * The changes from state `fromRoot` to state `toRoot` (filesystem root ids), sorted by path
 * bytes, one page at a time.
 */
export function diffStates(store: Store, fromRoot: Buffer, toRoot: Buffer, opts: DiffOptions = {}): DiffPage {
  const limit = opts.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw new LayerFsError('ERR_INVALID_ARGUMENT', `diff page limit must be a positive integer, got ${String(limit)}`);
  const after = opts.after === undefined ? undefined : parseCursor(opts.after);
  if (fromRoot.equals(toRoot)) return { entries: [], total: 0 };
  const all = store.read(() => new StateDiff(store, fromRoot, toRoot).run());
  return page(all, after, limit);
}

// ---------------------------------------------------------------------------------------------
// Paging

interface Cursor {
  path: Buffer;
  /** Entries with exactly `path` already returned (paths are unique, so normally 1). */
  seen: number;
}

function parseCursor(text: string): Cursor {
  const m = /^d1:((?:[0-9a-f]{2})*):([0-9]{1,9})$/.exec(text);
  if (!m) throw new LayerFsError('ERR_INVALID_ARGUMENT', `not a diff cursor: ${JSON.stringify(text)}`, { hint: 'pass the `next` value of the previous page' });
  return { path: Buffer.from(m[1]!, 'hex'), seen: Number(m[2]) };
}

function page(all: DiffEntry[], after: Cursor | undefined, limit: number): DiffPage {
  let start = 0;
  if (after) {
    // First entry whose path is >= the cursor's, then skip the ones with that path already seen.
    let lo = 0;
    let hi = all.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (Buffer.compare(all[mid]!.pathBytes, after.path) < 0) lo = mid + 1;
      else hi = mid;
    }
    start = lo;
    for (let k = 0; k < after.seen && start < all.length && all[start]!.pathBytes.equals(after.path); k++) start++;
  }
  const entries = all.slice(start, start + limit);
  const out: DiffPage = { entries, total: all.length };
  if (start + limit < all.length && entries.length > 0) {
    const last = entries[entries.length - 1]!.pathBytes;
    let seen = 0;
    for (let i = start + entries.length - 1; i >= 0 && all[i]!.pathBytes.equals(last); i--) seen++;
    out.next = `d1:${last.toString('hex')}:${seen}`;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The diff

interface Side {
  path: Buffer;
  key: string;
  serial: number;
  inode: Inode;
  used: boolean;
}

interface Pair {
  path: Buffer;
  a: number;
  b: number;
  old: Inode;
  neu: Inode;
}

interface Change {
  change: ChangeKind;
  path: Buffer;
  serial: number;
  inode: Inode;
  old?: { path: Buffer; inode: Inode };
  fields: ChangedField[];
}

const latin1 = (b: Buffer): string => b.toString('latin1');

function basename(p: Buffer): string {
  return latin1(p.subarray(p.lastIndexOf(SLASH) + 1));
}

class StateDiff implements NameSource {
  readonly io: PageIO;
  private readonly from: State;
  private readonly to: State;
  private readonly names = new Map<string, NameIndex>();
  private readonly deleted: Side[] = [];
  private readonly added: Side[] = [];
  private readonly pairs: Pair[] = [];
  private readonly changes: Change[] = [];
  /** Set when the states number their inodes independently: serial identity means nothing. */
  private renumbered = false;

  constructor(store: Store, fromRoot: Buffer, toRoot: Buffer) {
    this.io = store.pages;
    this.from = new State(this, store, fromRoot, 'old');
    this.to = new State(this, store, toRoot, 'new');
  }

  nameIndex(root: Buffer): NameIndex {
    const k = latin1(root);
    let ix = this.names.get(k);
    if (!ix) this.names.set(k, (ix = new NameIndex(this.io, root)));
    return ix;
  }

  run(): DiffEntry[] {
    const both: number[] = [];
    for (const c of diffTrees(TreeKind.Inodes, this.io, this.from.inodesRoot, this.to.inodesRoot)) {
      if (c.key.length !== 8) throw corrupt('inode table key is not an 8-byte serial');
      const serial = keySerial(c.key);
      const a = c.before ? decodeInode(c.before, serial) : null;
      const b = c.after ? decodeInode(c.after, serial) : null;
      this.from.prime(serial, a);
      this.to.prime(serial, b);
      if (a && b) {
        both.push(serial);
        // Serials follow inodes, and an inode never changes kind: this serial was reassigned.
        if (a.kind !== b.kind) this.renumbered = true;
      }
    }
    // Paths where the same serial sits in both states and its record changed; below them,
    // names that a changed directory binds differently.
    for (const s of both) {
      const a = this.from.inode(s)!;
      const b = this.to.inode(s)!;
      const newPaths = new Set(this.to.pathsOf(s).map(latin1));
      for (const p of this.from.pathsOf(s)) {
        if (!newPaths.has(latin1(p))) continue;
        this.modified(p, s, a, b);
        const ca = dirContent(a);
        const cb = dirContent(b);
        if (!sameId(ca, cb)) this.descend(p, ca, cb);
      }
    }
    this.classifyPairs();
    this.pairRenames();
    return this.entries();
  }

  private modified(path: Buffer, serial: number, a: Inode, b: Inode): void {
    const fields = changedFields(a, b);
    if (fields.length > 0) this.changes.push({ change: 'modified', path, serial, inode: b, old: { path, inode: a }, fields });
  }

  /** Walks down from a directory at `path` in both states, through names bound differently. */
  private descend(path: Buffer, before: Buffer | null, after: Buffer | null): void {
    const work: { path: Buffer; a: number | undefined; b: number | undefined }[] = [];
    const expand = (dir: Buffer, x: Buffer | null, y: Buffer | null): void => {
      const found: typeof work = [];
      for (const c of diffTrees(TreeKind.Directory, this.io, x, y)) {
        found.push({ path: joinPath(dir, c.key), a: c.before && decodeDirSerial(c.before), b: c.after && decodeDirSerial(c.after) });
      }
      // Depth first, in name order (the order does not matter for the result, only for memory).
      for (let i = found.length - 1; i >= 0; i--) work.push(found[i]!);
    };
    expand(path, before, after);
    // A directory serial is reached once per state; a forged state that names one twice (a
    // cycle, fan-out) would otherwise be listed without end.
    const seenA = new Set<number>();
    const seenB = new Set<number>();
    const once = (seen: Set<number>, serial: number | undefined, n: Inode | null, label: string) => {
      if (!n || n.kind !== InodeKind.Dir) return;
      if (seen.has(serial!)) throw corrupt(`${label} state: directory ${serial} is reached twice (a cycle or fan-out)`);
      seen.add(serial!);
    };
    while (work.length > 0) {
      const t = work.pop()!;
      if (t.a === t.b) continue;
      const a = t.a === undefined ? null : this.from.need(t.a);
      const b = t.b === undefined ? null : this.to.need(t.b);
      once(seenA, t.a, a, 'old');
      once(seenB, t.b, b, 'new');
      if (a && b) this.pair({ path: t.path, a: t.a!, b: t.b!, old: a, neu: b });
      else if (a) this.deleted.push({ path: t.path, key: latin1(t.path), serial: t.a!, inode: a, used: false });
      else if (b) this.added.push({ path: t.path, key: latin1(t.path), serial: t.b!, inode: b, used: false });
      const ca = dirContent(a);
      const cb = dirContent(b);
      if (!sameId(ca, cb)) expand(t.path, ca, cb);
    }
  }

  /** A path bound to different serials in the two states. */
  private pair(p: Pair): void {
    this.pairs.push(p);
    // An unchanged non-directory at an unchanged path under another serial, while its old serial
    // lives on elsewhere (or its new one existed before): the states number inodes independently.
    if (!this.renumbered && p.old.kind !== InodeKind.Dir && sameContent(p.old, p.neu) && (this.to.inode(p.a) !== null || this.from.inode(p.b) !== null)) {
      this.renumbered = true;
    }
  }

  /**
   * With trusted serials, a path whose old inode moved elsewhere (or whose new inode came from
   * elsewhere) is broken into deleted + added so the moves pair up as renames; otherwise it is
   * compared as one path.
   */
  private classifyPairs(): void {
    for (const p of this.pairs) {
      if (!this.renumbered && (this.to.inode(p.a) !== null || this.from.inode(p.b) !== null)) {
        const key = latin1(p.path);
        this.deleted.push({ path: p.path, key, serial: p.a, inode: p.old, used: false });
        this.added.push({ path: p.path, key, serial: p.b, inode: p.neu, used: false });
      } else {
        this.modified(p.path, p.b, p.old, p.neu);
      }
    }
  }

  private pairRenames(): void {
    const byPath = (x: Side, y: Side): number => Buffer.compare(x.path, y.path);
    this.deleted.sort(byPath);
    this.added.sort(byPath);
    const group = (list: Side[], keyOf: (s: Side) => string | null): Map<string, Side[]> => {
      const m = new Map<string, Side[]>();
      for (const s of list) {
        if (s.used) continue;
        const k = keyOf(s);
        if (k === null) continue;
        const g = m.get(k);
        if (g) g.push(s);
        else m.set(k, [s]);
      }
      return m;
    };
    // Only a path that disappeared is a rename source: one that holds something new is modified.
    const arrived = new Set(this.added.map((a) => a.key));
    const gone = this.deleted.filter((d) => !arrived.has(d.key));
    const match = (keyOf: (s: Side) => string | null): void => {
      const adds = group(this.added, keyOf);
      for (const [k, ds] of group(gone, keyOf)) {
        const as = adds.get(k);
        if (as) this.pairGroup(ds, as);
      }
    };
    if (!this.renumbered) match((s) => `${s.serial}:${s.inode.kind}`);
    match((s) => (s.inode.kind === InodeKind.File && s.inode.content ? `${s.inode.form}:${s.inode.content.toString('hex')}` : null));

    // A path deleted and added (a broken pair) that found no rename partners is one modified
    // path after all; one whose new occupant was renamed there was overwritten by the rename.
    const addedAt = new Map<string, Side>();
    for (const s of this.added) addedAt.set(s.key, s);
    for (const d of this.deleted) {
      if (d.used) continue;
      const a = addedAt.get(d.key);
      if (!a) continue;
      d.used = true;
      if (!a.used) {
        a.used = true;
        this.modified(a.path, a.serial, d.inode, a.inode);
      }
    }
    for (const d of this.deleted) if (!d.used) this.changes.push({ change: 'deleted', path: d.path, serial: d.serial, inode: d.inode, fields: [] });
    for (const a of this.added) if (!a.used) this.changes.push({ change: 'added', path: a.path, serial: a.serial, inode: a.inode, fields: [] });
  }

  /** Pairs deleted and added candidates of one group: same basename first, then in path order. */
  private pairGroup(ds: Side[], as: Side[]): void {
    const rename = (d: Side, a: Side): void => {
      d.used = true;
      a.used = true;
      this.changes.push({ change: 'renamed', path: a.path, serial: a.serial, inode: a.inode, old: { path: d.path, inode: d.inode }, fields: changedFields(d.inode, a.inode) });
    };
    if (ds.length > 1 || as.length > 1) {
      const byName = new Map<string, Side[]>();
      for (const a of as) {
        const k = basename(a.path);
        const l = byName.get(k);
        if (l) l.push(a);
        else byName.set(k, [a]);
      }
      for (const d of ds) {
        const l = byName.get(basename(d.path));
        const a = l?.find((x) => !x.used);
        if (a) rename(d, a);
      }
    }
    let j = 0;
    for (const d of ds) {
      if (d.used) continue;
      while (j < as.length && as[j]!.used) j++;
      if (j >= as.length) break;
      rename(d, as[j]!);
    }
  }

  private entries(): DiffEntry[] {
    this.changes.sort((x, y) => Buffer.compare(x.path, y.path) || x.change.localeCompare(y.change));
    return this.changes.map((c) => {
      const e: DiffEntry = { change: c.change, path: c.path.toString('utf8'), pathBytes: c.path, kind: KIND_NAMES[c.inode.kind], fields: c.fields, serial: c.serial };
      if (c.change === 'renamed') {
        e.oldPath = c.old!.path.toString('utf8');
        e.oldPathBytes = c.old!.path;
      }
      if (hasSize(c.inode)) e.size = c.inode.size;
      if ((c.change === 'modified' || c.change === 'renamed') && hasSize(c.old!.inode)) e.oldSize = c.old!.inode.size;
      return e;
    });
  }
}

function hasSize(n: Inode): boolean {
  return n.kind === InodeKind.File || n.kind === InodeKind.Symlink;
}
