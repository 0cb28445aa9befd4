/**
 * Extent trees: a large file's content as an ordered list of (chunk id, length), grouped into
 * nodes whose boundaries are chosen by the chunk ids themselves, so equal content gives equal
 * nodes and an edit shares every node away from the changed chunks.
 */
import { ByteReader, ByteWriter } from '../../format/bytes.js';
import { LayerFsError } from '../../errors.js';

export interface Extent {
  id: Buffer;
  length: number;
}

export interface ExtentNode {
  level: number;
  /** chunk ids at level 0, child node ids above */
  ids: Buffer[];
  /** chunk lengths at level 0, subtree byte counts above */
  lengths: number[];
}

const BOUNDARY_MASK = 63;

function boundary(level: number, id: Buffer): boolean {
  return ((id[level % 32]! ^ id[31 - (level % 32)]!) & BOUNDARY_MASK) === 0;
}

export function encodeExtentNode(n: ExtentNode): Buffer {
  const w = new ByteWriter(8 + n.ids.length * 37);
  w.u8(n.level).uv(n.ids.length);
  for (let i = 0; i < n.ids.length; i++) w.bytes(n.ids[i]!).uv(n.lengths[i]!);
  return w.finish();
}

export function decodeExtentNode(data: Buffer, what: string): ExtentNode {
  const r = new ByteReader(data, what);
  const level = r.u8();
  const count = r.count(33);
  if (count === 0) throw new LayerFsError('ERR_CORRUPT', `${what}: empty extent node`);
  const ids: Buffer[] = new Array(count);
  const lengths: number[] = new Array(count);
  for (let i = 0; i < count; i++) {
    ids[i] = r.bytes(32);
    lengths[i] = r.uv();
  }
  r.end();
  return { level, ids, lengths };
}

interface Level {
  ids: Buffer[];
  lengths: number[];
  /** Nodes closed at this level so far. */
  nodes: number;
  /** The first node, held back until a second one shows this level is not the top. */
  first: { id: Buffer; length: number } | null;
}

/**
 * Builds an extent tree while the extents arrive, holding only each level's open node, so memory
 * does not grow with the file. Nodes and root are exactly those of building the whole list level
 * by level: a node ends after a boundary id or at the end of its level, and the top is the first
 * level with a single node (which is why a level's first node is only passed up once a second
 * exists).
 */
export class ExtentTreeBuilder {
  private readonly levels: Level[] = [];

  /** `save` stores an encoded node and returns its id. */
  constructor(private readonly save: (node: Buffer) => Buffer) {}

  push(id: Buffer, length: number): void {
    this.add(0, id, length);
  }

  /** Closes every level and returns the root id. */
  finish(): Buffer {
    if (this.levels.length === 0) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'an extent tree needs at least one extent');
    for (let level = 0; ; level++) {
      const l = this.levels[level]!;
      if (l.ids.length > 0) this.close(level);
      if (l.nodes === 1) return l.first!.id;
    }
  }

  private add(level: number, id: Buffer, length: number): void {
    let l = this.levels[level];
    if (!l) this.levels.push((l = { ids: [], lengths: [], nodes: 0, first: null }));
    l.ids.push(id);
    l.lengths.push(length);
    if (boundary(level, id)) this.close(level);
  }

  private close(level: number): void {
    const l = this.levels[level]!;
    const id = this.save(encodeExtentNode({ level, ids: l.ids, lengths: l.lengths }));
    const length = l.lengths.reduce((a, b) => a + b, 0);
    l.ids = [];
    l.lengths = [];
    if (++l.nodes === 1) {
      l.first = { id, length };
      return;
    }
    if (l.first) {
      this.add(level + 1, l.first.id, l.first.length);
      l.first = null;
    }
    this.add(level + 1, id, length);
  }
}

/** Builds the tree of a whole extent list; `save` stores a node and returns its id. Returns the root id. */
export function buildExtentTree(extents: Extent[], save: (node: Buffer) => Buffer): Buffer {
  const b = new ExtentTreeBuilder(save);
  for (const e of extents) b.push(e.id, e.length);
  return b.finish();
}

/** One entry of a walk frontier: a node (level > 0) or a chunk (level 0), where it starts and its bytes. */
interface ExtentRef {
  id: Buffer;
  level: number;
  offset: number;
  length: number;
}

/**
 * The chunks of `after` that `before` does not share, each paired with the chunks of `before`
 * it overlaps by offset (at most `maxBases`, in order; likely delta bases: after an edit,
 * FastCDC takes a few chunks to meet an old cut, so a new chunk often straddles two). Both trees are expanded one level at a
 * time and subtrees they share are dropped before expanding, so the nodes read follow the edit,
 * not the file size: a 4 KiB write into a 500 MiB file reads a few nodes per level.
 */
export function replacedChunks(before: Buffer, after: Buffer, load: (id: Buffer) => Buffer, maxBases: number): { id: Buffer; bases: Buffer[] }[] {
  const nodes = new Map<string, ExtentNode>();
  const node = (id: Buffer): ExtentNode => {
    const k = id.toString('latin1');
    let n = nodes.get(k);
    if (!n) nodes.set(k, (n = decodeExtentNode(load(id), 'extent node')));
    return n;
  };
  let a: ExtentRef[] = [{ id: before, level: node(before).level + 1, offset: 0, length: Infinity }];
  let b: ExtentRef[] = [{ id: after, level: node(after).level + 1, offset: 0, length: Infinity }];
  for (;;) {
    const inA = new Set(a.map((r) => r.id.toString('latin1')));
    const shared = new Set(b.map((r) => r.id.toString('latin1')).filter((k) => inA.has(k)));
    a = a.filter((r) => !shared.has(r.id.toString('latin1')));
    b = b.filter((r) => !shared.has(r.id.toString('latin1')));
    if (b.length === 0) return [];
    const top = Math.max(...a.map((r) => r.level), ...b.map((r) => r.level));
    if (top === 0) return b.map((c) => ({ id: c.id, bases: overlapping(a, c.offset, c.offset + c.length, maxBases) })).filter((p) => p.bases.length > 0);
    const expand = (refs: ExtentRef[]): ExtentRef[] =>
      refs.flatMap((r) => {
        if (r.level !== top) return [r];
        // A ref's level is its node's level + 1, so a node of level 0 expands into chunks (0).
        const n = node(r.id);
        let offset = r.offset;
        return n.ids.map((id, i) => {
          const child = { id, level: n.level, offset, length: n.lengths[i]! };
          offset += n.lengths[i]!;
          return child;
        });
      });
    a = expand(a);
    b = expand(b);
  }
}

/**
 * Up to `max` chunks of `chunks` (sorted by offset) from the last one starting at or before
 * `from` on, while they start before `to`.
 */
function overlapping(chunks: ExtentRef[], from: number, to: number, max: number): Buffer[] {
  let lo = 0;
  let hi = chunks.length - 1;
  if (hi < 0) return [];
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (chunks[mid]!.offset <= from) lo = mid;
    else hi = mid - 1;
  }
  const out: Buffer[] = [];
  for (let i = lo; i < chunks.length && out.length < max && (i === lo || chunks[i]!.offset < to); i++) out.push(chunks[i]!.id);
  return out;
}
