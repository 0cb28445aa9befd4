/**
 * Extent trees read and edited in place: lookups descend by byte offset (loading only the nodes
 * on the way), and an edit that replaces a run of chunks rewrites only the nodes whose entries
 * change — one or two per level — instead of rebuilding the tree from the full chunk list.
 *
 * The result is byte-identical to building the tree from scratch (docs/FORMAT.md, "Extent
 * tree"): node boundaries depend only on the ids of the entries, so outside the edited run the
 * old nodes are exactly the nodes a fresh build makes. Replacing entries [from, to) can change
 * nodes from the one holding `from` up to the one holding the first entry after the run (the
 * edited run may lose or gain a boundary); left of that nothing moves, right of it the first
 * unchanged boundary entry ends the disturbance. The same holds one level up for the run of
 * node entries that changed, and so on to the root.
 */
import { LRUCache } from 'lru-cache';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { ObjectKind, type ObjectReader } from '../store/index.js';
import { encodeExtentNode, decodeExtentNode, type Extent } from '../store/tree/extents.js';

export interface LoadedNode {
  level: number;
  ids: Buffer[];
  lengths: number[];
  /** starts[i] = bytes before entry i inside this node; starts[n] = the node's byte count. */
  starts: Float64Array;
}

/** The boundary rule of docs/FORMAT.md: a node ends after an entry whose id satisfies it. */
export function isExtentBoundary(level: number, id: Buffer): boolean {
  return ((id[level % 32]! ^ id[31 - (level % 32)]!) & 63) === 0;
}

function loaded(level: number, ids: Buffer[], lengths: number[]): LoadedNode {
  const starts = new Float64Array(ids.length + 1);
  for (let i = 0; i < lengths.length; i++) starts[i + 1] = starts[i]! + lengths[i]!;
  return { level, ids, lengths, starts };
}

/** Index i with starts[i] <= x < starts[i + 1]. */
function entryIndex(starts: Float64Array, x: number): number {
  let lo = 0;
  let hi = starts.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (starts[mid]! <= x) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export interface NodeSource {
  node(id: Buffer): LoadedNode;
}

/** Decoded extent nodes through a small LRU; authenticated reads. */
export class ExtentNodes implements NodeSource {
  private readonly cache: LRUCache<string, LoadedNode>;

  constructor(
    private readonly objects: ObjectReader,
    limit = 4096,
  ) {
    this.cache = new LRUCache({ max: limit });
  }

  node(id: Buffer): LoadedNode {
    const key = id.toString('latin1');
    const hit = this.cache.get(key);
    if (hit) return hit;
    const n = decodeExtentNode(this.objects.get(id, ObjectKind.Extents), `extent node ${toHex(id)}`);
    const node = loaded(n.level, n.ids.map((x) => Buffer.from(x)), n.lengths);
    this.cache.set(key, node);
    return node;
  }
}

export interface ChunkPos {
  id: Buffer;
  start: number;
  length: number;
}

/** The chunk holding byte x (0 <= x < size) of the tree at `root`. */
export function chunkAt(src: NodeSource, root: Buffer, x: number): ChunkPos {
  let node = src.node(root);
  let start = 0;
  for (let depth = 0; ; depth++) {
    if (depth > 64) throw new LayerFsError('ERR_CORRUPT', `extent tree ${toHex(root)} is too deep`);
    const rel = x - start;
    if (rel < 0 || rel >= node.starts[node.starts.length - 1]!) throw new LayerFsError('ERR_CORRUPT', `extent tree ${toHex(root)} does not cover byte ${x}`);
    const i = entryIndex(node.starts, rel);
    if (node.level === 0) return { id: node.ids[i]!, start: start + node.starts[i]!, length: node.lengths[i]! };
    start += node.starts[i]!;
    const child = src.node(node.ids[i]!);
    if (child.level !== node.level - 1) throw new LayerFsError('ERR_CORRUPT', `extent tree ${toHex(root)} has a node at the wrong level`);
    node = child;
  }
}

interface Placed {
  node: LoadedNode;
  start: number;
}

/** Nodes of `level` whose bytes intersect the closed range [a, b], in order. */
function nodesCovering(src: NodeSource, root: Buffer, level: number, a: number, b: number): Placed[] {
  const out: Placed[] = [];
  const visit = (id: Buffer, start: number, expect: number | null) => {
    const node = src.node(id);
    if (expect !== null && node.level !== expect) throw new LayerFsError('ERR_CORRUPT', `extent node ${toHex(id)} is at the wrong level`);
    if (node.level === level) {
      out.push({ node, start });
      return;
    }
    if (node.level < level) throw new LayerFsError('ERR_CORRUPT', `extent tree ${toHex(root)} is shallower than expected`);
    for (let i = 0; i < node.ids.length; i++) {
      const cs = start + node.starts[i]!;
      const ce = start + node.starts[i + 1]!;
      if (ce > a && cs <= b) visit(node.ids[i]!, cs, node.level - 1);
    }
  };
  visit(root, 0, null);
  return out;
}

/** Splits entries into nodes at boundary entries; saves each; returns the node entries. */
function buildLevel(level: number, entries: Extent[], save: (node: Buffer, decoded: LoadedNode) => Buffer): Extent[] {
  const out: Extent[] = [];
  let first = 0;
  for (let i = 0; i < entries.length; i++) {
    if (isExtentBoundary(level, entries[i]!.id) || i === entries.length - 1) {
      const run = entries.slice(first, i + 1);
      const ids = run.map((e) => e.id);
      const lengths = run.map((e) => e.length);
      const data = encodeExtentNode({ level, ids, lengths });
      const node = loaded(level, ids, lengths);
      out.push({ id: save(data, node), length: node.starts[node.starts.length - 1]! });
      first = i + 1;
    }
  }
  return out;
}

/** A run of old chunks [from, to) (byte offsets at chunk boundaries) replaced by new chunks. */
export interface Replacement {
  from: number;
  to: number;
  entries: Extent[];
}

/**
 * Applies one replacement to the tree at `root` (covering `size` bytes) and returns the new root.
 * `save` stores an encoded node and returns its id; `src` must also find the nodes saved here
 * (they may not be readable from the Store before the transaction commits).
 */
export function replaceExtents(src: NodeSource, root: Buffer, size: number, r: Replacement, save: (node: Buffer, decoded: LoadedNode) => Buffer): Buffer {
  if (r.entries.length === 0 && r.from === 0 && r.to === size) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'an extent tree needs at least one extent');
  let level = 0;
  let from = r.from;
  let to = r.to;
  let entries = r.entries;
  const top = src.node(root).level;
  for (;;) {
    // The old nodes of this level the edit can touch: from the one holding `from` to the one
    // holding the first entry after the run (the last node when the run reaches the end).
    const run = nodesCovering(src, root, level, from, to < size ? to : size - 1);
    if (run.length === 0) throw new LayerFsError('ERR_CORRUPT', `extent tree ${toHex(root)} has no node at level ${level} over [${from}, ${to})`);
    const s = run[0]!.start;
    const last = run[run.length - 1]!;
    const t = last.start + last.node.starts[last.node.starts.length - 1]!;
    const merged: Extent[] = [];
    for (const p of run) {
      for (let i = 0; i < p.node.ids.length; i++) {
        const st = p.start + p.node.starts[i]!;
        if (st < from) merged.push({ id: p.node.ids[i]!, length: p.node.lengths[i]! });
      }
    }
    for (const e of entries) merged.push(e);
    for (const p of run) {
      for (let i = 0; i < p.node.ids.length; i++) {
        const st = p.start + p.node.starts[i]!;
        if (st >= to) merged.push({ id: p.node.ids[i]!, length: p.node.lengths[i]! });
      }
    }
    // An empty run is a deletion of whole nodes (a cut tail starting at a node's first entry):
    // the node before it already ends at a boundary, so the level above just loses entries.
    if (merged.length === 0 && s === 0 && t === size) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'an extent tree needs at least one extent');
    // The top is the first level with a single node: when an edit leaves one node below, that
    // node (or the first below it with more than one entry) is the root, as in a fresh build.
    if (level > 0 && merged.length === 1 && s === 0 && t === size) return topOf(src, merged[0]!.id);
    let nodes = buildLevel(level, merged, save);
    if (s === 0 && t === size) {
      // The whole level was rebuilt: its nodes are all there is; finish upwards from them.
      let l = level;
      while (nodes.length > 1) nodes = buildLevel(++l, nodes, save);
      return nodes[0]!.id;
    }
    if (level >= top) throw new LayerFsError('ERR_CORRUPT', `extent tree ${toHex(root)}: a partial run at its top level`);
    from = s;
    to = t;
    entries = nodes;
    level++;
  }
}

/** Descends through nodes of a single entry: a fresh build never makes one above level 0. */
function topOf(src: NodeSource, id: Buffer): Buffer {
  for (let node = src.node(id); node.level > 0 && node.ids.length === 1; node = src.node(id)) id = node.ids[0]!;
  return id;
}

/** Saved nodes of one edit, readable before the transaction commits, in front of a NodeSource. */
export class FreshNodes implements NodeSource {
  private readonly fresh = new Map<string, LoadedNode>();

  constructor(private readonly base: NodeSource) {}

  remember(id: Buffer, node: LoadedNode): void {
    this.fresh.set(id.toString('latin1'), node);
  }

  node(id: Buffer): LoadedNode {
    return this.fresh.get(id.toString('latin1')) ?? this.base.node(id);
  }
}
