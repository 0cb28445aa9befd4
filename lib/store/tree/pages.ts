/**
 * Canonical copy-on-write page trees (a prolly tree). A node ends after an entry whose key
 * hashes to a boundary pattern, so a tree's shape depends only on its key set: the same entries
 * always give the same pages and the same root id, whatever edits led there, and an edit rewrites
 * one page per level (plus neighbours only where a boundary key itself appears or disappears).
 *
 * Entries at level 0 are (key, value); at level L > 0 they are (first key of child, child id).
 */
import { ByteReader, ByteWriter } from '../../format/bytes.js';
import { compareBytes } from '../../format/compare.js';
import { LayerFsError } from '../../errors.js';

export enum TreeKind {
  Inodes = 1,
  Directory = 2,
}

/**
 * One key in (mask + 1) ends a page. Inode-table pages average 16 records (about 1.5 KB), so an
 * edit rewrites little beyond the file itself; directory pages average 64 names, which keeps
 * big directories shallow.
 */
const BOUNDARY_MASKS: Record<TreeKind, number> = {
  [TreeKind.Inodes]: 15,
  [TreeKind.Directory]: 63,
};

export interface TreeNode {
  level: number;
  keys: Buffer[];
  /** level 0: values; level > 0: child ids */
  vals: Buffer[];
}

/** FNV-1a over the key, salted by level, then the murmur3 finalizer: cheap and well mixed. */
export function isBoundary(kind: TreeKind, level: number, key: Uint8Array): boolean {
  let h = 0x811c9dc5 ^ Math.imul(level + 1, 0x9e3779b9);
  for (let i = 0; i < key.length; i++) {
    h ^= key[i]!;
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h & BOUNDARY_MASKS[kind]) === 0;
}

export function encodeNode(kind: TreeKind, node: TreeNode): Buffer {
  let size = 8;
  for (let i = 0; i < node.keys.length; i++) size += node.keys[i]!.length + node.vals[i]!.length + 8;
  const w = new ByteWriter(size);
  w.u8(kind).u8(node.level).uv(node.keys.length);
  for (let i = 0; i < node.keys.length; i++) {
    w.lbytes(node.keys[i]!);
    if (node.level === 0) w.lbytes(node.vals[i]!);
    else w.bytes(node.vals[i]!);
  }
  return w.finish();
}

export function decodeNode(kind: TreeKind, data: Buffer, what: string): TreeNode {
  const r = new ByteReader(data, what);
  const k = r.u8();
  if (k !== kind) throw new LayerFsError('ERR_CORRUPT', `${what}: page of tree kind ${k}, expected ${kind}`);
  const level = r.u8();
  const n = r.count(level === 0 ? 2 : 33);
  const keys: Buffer[] = new Array(n);
  const vals: Buffer[] = new Array(n);
  for (let i = 0; i < n; i++) {
    keys[i] = r.lbytes();
    vals[i] = level === 0 ? r.lbytes() : r.bytes(32);
    if (i > 0 && compareBytes(keys[i - 1]!, keys[i]!) >= 0) throw new LayerFsError('ERR_CORRUPT', `${what}: keys out of order`);
  }
  r.end();
  return { level, keys, vals };
}

export interface PageIO {
  load(kind: TreeKind, id: Buffer): TreeNode;
  /** Stores an encoded page and returns its id. */
  save(kind: TreeKind, data: Buffer): Buffer;
}

/** Builds a canonical tree from entries pushed in strictly increasing key order. */
export class TreeBuilder {
  private readonly pending: { keys: Buffer[]; vals: Buffer[] }[] = [];
  private readonly emitted: number[] = [];

  constructor(
    private readonly kind: TreeKind,
    private readonly io: PageIO,
  ) {}

  private level(l: number): { keys: Buffer[]; vals: Buffer[] } {
    while (this.pending.length <= l) {
      this.pending.push({ keys: [], vals: [] });
      this.emitted.push(0);
    }
    return this.pending[l]!;
  }

  private add(l: number, key: Buffer, val: Buffer): void {
    const p = this.level(l);
    p.keys.push(key);
    p.vals.push(val);
    if (isBoundary(this.kind, l, key)) this.emit(l);
  }

  private emit(l: number): Buffer {
    const p = this.level(l);
    const id = this.io.save(this.kind, encodeNode(this.kind, { level: l, keys: p.keys, vals: p.vals }));
    const first = p.keys[0]!;
    this.pending[l] = { keys: [], vals: [] };
    this.emitted[l]!++;
    this.add(l + 1, first, id);
    return id;
  }

  pushEntry(key: Buffer, value: Buffer): void {
    this.add(0, key, value);
  }

  /** True when a finished node of `level` can be reused whole at the current position. */
  alignedAt(level: number): boolean {
    for (let l = 0; l <= level && l < this.pending.length; l++) if (this.pending[l]!.keys.length > 0) return false;
    return true;
  }

  pushNode(level: number, firstKey: Buffer, id: Buffer): void {
    this.level(level);
    this.emitted[level]!++;
    this.add(level + 1, firstKey, id);
  }

  /** Returns the root id, or null for an empty tree. */
  finish(): Buffer | null {
    for (let l = 0; ; l++) {
      const p = this.level(l);
      let higher = false;
      for (let k = l + 1; k < this.pending.length; k++) if (this.pending[k]!.keys.length > 0 || this.emitted[k]! > 0) higher = true;
      if (!higher) {
        if (p.keys.length === 0) return null;
        // The root is the first level with a single node; a lone entry above a single node
        // would be a redundant level.
        if (l > 0 && p.keys.length === 1 && this.emitted[l] === 0) return p.vals[0]!;
        const id = this.io.save(this.kind, encodeNode(this.kind, { level: l, keys: p.keys, vals: p.vals }));
        this.pending[l] = { keys: [], vals: [] };
        return id;
      }
      if (p.keys.length > 0) this.emit(l);
    }
  }
}

export interface Mutation {
  key: Buffer;
  /** null deletes the key */
  value: Buffer | null;
}

/**
 * Sorted, key-unique mutations by index, made on demand: a commit's inode table takes one per
 * changed file, and a list of Mutation objects (with a key Buffer and a value view each) was about
 * 20 MiB of heap at a large commit's peak.
 */
export interface Mutations {
  readonly length: number;
  key(i: number): Buffer;
  /** null deletes the key */
  value(i: number): Buffer | null;
}

function listed(muts: Mutation[]): Mutations {
  return { length: muts.length, key: (i) => muts[i]!.key, value: (i) => muts[i]!.value };
}

/**
 * Applies sorted, key-unique mutations to the tree at `root` and returns the new root. Subtrees
 * without mutations are reused by id when the builder is aligned with them.
 */
export function updateTree(kind: TreeKind, io: PageIO, root: Buffer | null, mutations: Mutation[] | Mutations): Buffer | null {
  const muts = Array.isArray(mutations) ? listed(mutations) : mutations;
  const b = new TreeBuilder(kind, io);
  const push = (i: number, key: Buffer): void => {
    const v = muts.value(i);
    if (v !== null) b.pushEntry(key, v);
  };
  if (root === null) {
    for (let i = 0; i < muts.length; i++) push(i, muts.key(i));
    return b.finish();
  }
  // Mutations [lo, hi) fall under `node`.
  const visit = (node: TreeNode, lo: number, hi: number): void => {
    if (node.level === 0) {
      let j = lo;
      for (let i = 0; i < node.keys.length; i++) {
        const k = node.keys[i]!;
        let c = 1;
        while (j < hi) {
          const key = muts.key(j);
          c = compareBytes(key, k);
          if (c >= 0) break;
          push(j++, key);
        }
        if (j < hi && c === 0) push(j++, k);
        else b.pushEntry(k, node.vals[i]!);
      }
      for (; j < hi; j++) push(j, muts.key(j));
      return;
    }
    let j = lo;
    for (let i = 0; i < node.keys.length; i++) {
      const next = node.keys[i + 1];
      const start = j;
      while (j < hi && (next === undefined || compareBytes(muts.key(j), next) < 0)) j++;
      if (start === j && b.alignedAt(node.level - 1)) b.pushNode(node.level - 1, node.keys[i]!, node.vals[i]!);
      else visit(child(kind, io, node, i), start, j);
    }
  };
  visit(io.load(kind, root), 0, muts.length);
  return b.finish();
}

export function lookup(kind: TreeKind, io: PageIO, root: Buffer | null, key: Buffer): Buffer | undefined {
  if (root === null) return undefined;
  let node = io.load(kind, root);
  while (node.level > 0) {
    let i = upperBound(node.keys, key) - 1;
    if (i < 0) i = 0;
    node = child(kind, io, node, i);
  }
  const i = upperBound(node.keys, key) - 1;
  return i >= 0 && compareBytes(node.keys[i]!, key) === 0 ? node.vals[i] : undefined;
}

/** Index of the first key greater than `key`. */
function upperBound(keys: Buffer[], key: Buffer): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareBytes(keys[mid]!, key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the first key not less than `key`. */
function lowerBound(keys: Buffer[], key: Buffer): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareBytes(keys[mid]!, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * In-order entries with key >= `from` (all when omitted). Untrusted pages are checked on the
 * way: each child is one level below its parent, and keys rise strictly across page
 * boundaries too, so a forged tree cannot repeat a name (or a whole page) in two places.
 */
export function* entries(kind: TreeKind, io: PageIO, root: Buffer | null, from?: Buffer): Generator<[Buffer, Buffer]> {
  if (root === null) return;
  let last: Buffer | null = null;
  function* walk(node: TreeNode): Generator<[Buffer, Buffer]> {
    if (node.level === 0) {
      const start = from ? lowerBound(node.keys, from) : 0;
      for (let i = start; i < node.keys.length; i++) {
        const k = node.keys[i]!;
        if (last !== null && compareBytes(last, k) >= 0) throw new LayerFsError('ERR_CORRUPT', `namespace tree of kind ${kind}: key ${JSON.stringify(k.toString('latin1'))} repeats or is out of order across pages`);
        last = k;
        yield [k, node.vals[i]!];
      }
      return;
    }
    let start = 0;
    if (from) start = Math.max(0, upperBound(node.keys, from) - 1);
    for (let i = start; i < node.keys.length; i++) yield* walk(child(kind, io, node, i));
  }
  yield* walk(io.load(kind, root));
}

/** Child `i` of an inner node: exactly one level below it (so any walk is at most 256 deep), starting at the entry's key. */
export function child(kind: TreeKind, io: PageIO, node: TreeNode, i: number): TreeNode {
  const c = io.load(kind, node.vals[i]!);
  if (c.level !== node.level - 1) throw new LayerFsError('ERR_CORRUPT', `namespace tree of kind ${kind}: a page of level ${node.level} points at one of level ${c.level}`);
  // The entry's key is its child's first key: lookups (which follow keys) and listings (which
  // follow pages) then find the same entries.
  if (c.keys.length === 0 || !c.keys[0]!.equals(node.keys[i]!)) throw new LayerFsError('ERR_CORRUPT', `namespace tree of kind ${kind}: a page of level ${node.level} misnames the first key of its child`);
  return c;
}

/** Every page id reachable from `root`, children before parents. */
export function* pageIds(kind: TreeKind, io: PageIO, root: Buffer | null): Generator<Buffer> {
  if (root === null) return;
  function* walk(id: Buffer, node: TreeNode): Generator<Buffer> {
    if (node.level > 0) for (let i = 0; i < node.vals.length; i++) yield* walk(node.vals[i]!, child(kind, io, node, i));
    yield id;
  }
  yield* walk(root, io.load(kind, root));
}
