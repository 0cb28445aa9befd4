/**
 * Delta choices of an ObjectWriter (object-writer.ts): whether a new object is stored as a zstd
 * delta against the bases offered for it, within the chain bounds (docs/FORMAT.md "Physical
 * forms", codec 2).
 */
import { zstdCompress, zstdCompressResult, zstdCompressStart, zstdDecompress } from '../native/zstd.js';
import { LayerFsError } from '../errors.js';
import { CHUNK_DELTA_LEVEL, Codec, COMMIT_DELTA_LEVEL, DELTA_MAX_BASES, DELTA_MAX_CHAIN_BYTES, DELTA_MAX_DEPTH, DELTA_MIN_SIZE, KEEP_DELTA, KEEP_DELTA_OF_WHOLE, KEEP_TREE_DELTA, REBASE_DEPTH } from './codec.js';
import { deltaBases, ObjectKind } from './object-id.js';
import type { ChainInfo, DeltaProposal, Pending } from './object-groups.js';

/** Where a planner finds objects: this writer's unflushed ones, then the index. */
export interface DeltaContext {
  /** Objects written but not flushed, by id (latin1). */
  open: Map<string, Pending>;
  /** The index row of a stored object. */
  locate(id: Buffer): { size: number; codec: number; base: Buffer | null } | undefined;
  /** A stored object's bytes, authenticated, as a view valid until the next borrow (base-reader.ts). */
  borrow(id: Buffer): Buffer;
  /** Bytes a small file would take compressed whole (as its group compresses it), when known. */
  wholeCost?(data: Uint8Array): number;
}

export class DeltaPlanner {
  /** The last prefix, by its bases' ids: the next chunk is usually offered the same old chunks. */
  private lastPrefix: { key: Buffer; bytes: Buffer } | undefined;
  /** Where the last prefix is joined. */
  private prefixBuf = Buffer.alloc(0);

  constructor(private readonly ctx: DeltaContext) {}

  /**
   * The delta of `p` (canonical bytes `data`) against `bases` if it pays (KEEP_DELTA, or
   * KEEP_TREE_DELTA for tree objects) and the chains stay within their bounds; when the one base
   * offered ends a full chain, against its ancestor REBASE_DEPTH links from a full object.
   */
  deltaOf(p: Pending, data: Uint8Array, bases: Buffer[]): Pending['delta'] {
    const plan = this.plan(p, bases);
    if (!plan) return undefined;
    return this.finish(p, data, plan, zstdCompress(data, plan.level, plan.prefix));
  }

  /**
   * deltaOf with the compression on the addon's threads: the delta's frame is started now and
   * judged by `settle` (started is undefined when no delta is tried). The chains are bounded as
   * if the delta were kept, so one that is not only leaves a chain shorter than it allowed for.
   */
  start(p: Pending, data: Uint8Array, bases: Buffer[], inline = false): DeltaProposal | undefined {
    const plan = this.plan(p, bases);
    if (!plan) return undefined;
    if (inline) plan.frame = zstdCompress(data, plan.level, plan.prefix);
    else plan.job = zstdCompressStart(data, plan.level, undefined, plan.prefix);
    plan.prefix = undefined;
    return plan;
  }

  /** The delta a proposal (start) yields if it pays; waits for its frame. */
  settle(p: Pending, data: Uint8Array, proposal: DeltaProposal): Pending['delta'] {
    let frame: Buffer | undefined;
    try {
      frame = proposal.frame ?? zstdCompressResult(proposal.job);
    } catch {
      // Failed on the addon's thread: tried once more here, where a real failure throws.
    }
    if (!frame) {
      // Or a result the addon no longer holds (zstdCompressResult): compressed here instead.
      const prefix = this.prefixOf(proposal.ids);
      if (!prefix) return undefined;
      frame = zstdCompress(data, proposal.level, prefix);
    }
    return this.finish(p, data, proposal, frame);
  }

  /** The bases a delta of `p` is made against and its chain depth; undefined when no delta is tried. */
  private plan(p: Pending, bases: Buffer[]): DeltaProposal | undefined {
    let ids = bases.slice(0, DELTA_MAX_BASES);
    if (ids.length === 0 || p.length < DELTA_MIN_SIZE || ids.some((b) => b.equals(p.id))) return undefined;
    let chain = this.chainOf(ids, p.id, DELTA_MAX_CHAIN_BYTES - p.length);
    if (chain && chain.depth + 1 > DELTA_MAX_DEPTH && ids.length === 1) {
      // A full chain: delta against an older version on it instead of storing this one whole.
      const older = this.ancestor(ids[0]!, chain.depth + 1 - REBASE_DEPTH);
      if (older) {
        ids = [older];
        chain = this.chainOf(ids, p.id, DELTA_MAX_CHAIN_BYTES - p.length);
      }
    }
    if (!chain || chain.depth + 1 > DELTA_MAX_DEPTH) return undefined;
    const prefix = this.prefixOf(ids);
    if (!prefix) return undefined;
    const level = p.kind === ObjectKind.Chunk ? CHUNK_DELTA_LEVEL : COMMIT_DELTA_LEVEL;
    return { job: 0, ids, base: ids.length === 1 ? ids[0]! : Buffer.concat(ids), depth: chain.depth + 1, level, prefix };
  }

  /** The delta of `p` with `frame`, if it pays (KEEP_DELTA, KEEP_TREE_DELTA, smallerThanWhole). */
  private finish(p: Pending, data: Uint8Array, plan: DeltaProposal, frame: Buffer): Pending['delta'] {
    if (frame.length > p.length * (p.kind === ObjectKind.Blob || p.kind === ObjectKind.Chunk ? KEEP_DELTA : KEEP_TREE_DELTA) && !this.smallerThanWhole(p, data, frame)) return undefined;
    return { base: plan.base, frame, depth: plan.depth };
  }

  /** The bytes of `p`, written by this writer as a delta and not flushed yet: its frame decoded against its bases. */
  decoded(p: Pending): Buffer {
    const d = p.delta!;
    const parts: Buffer[] = [];
    for (const b of deltaBases(d.base)) {
      const bytes = this.bytesOf(b);
      if (!bytes) throw new LayerFsError('ERR_CORRUPT', `delta base ${b.toString('hex')} of an unwritten object cannot be read`, { id: b.toString('hex') });
      // Copied: the next base's read may reuse the buffer this one was lent from.
      parts.push(Buffer.from(bytes));
    }
    return zstdDecompress(d.frame, p.length, parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  }

  /**
   * A small file's delta that is larger than KEEP_DELTA of it is still kept when it is clearly
   * smaller than the file compressed whole would be (KEEP_DELTA_OF_WHOLE): a release's edited
   * source file compresses whole to about a fifth of its size, so a delta of a third of the file
   * loses, and one of a tenth wins though KEEP_DELTA would not have it.
   */
  private smallerThanWhole(p: Pending, data: Uint8Array, frame: Buffer): boolean {
    return p.kind === ObjectKind.Blob && this.ctx.wholeCost !== undefined && frame.length <= this.ctx.wholeCost(data) * KEEP_DELTA_OF_WHOLE;
  }

  /**
   * Links and bytes a read of `ids` decodes (the deepest chain, every object on the way
   * counted); undefined if one is unknown, reaches `avoid`, or the chains pass DELTA_MAX_DEPTH
   * links or `budget` bytes.
   */
  private chainOf(ids: Buffer[], avoid: Buffer, budget: number): ChainInfo | undefined {
    let bytes = 0;
    const walk = (id: Buffer, depth: number): number | undefined => {
      if (depth > DELTA_MAX_DEPTH || id.equals(avoid)) return undefined;
      const p = this.ctx.open.get(id.toString('latin1'));
      let base: Buffer | null;
      if (p) {
        bytes += p.length;
        // A proposed delta counts as kept: one that is not leaves the chain shorter.
        base = p.delta?.base ?? p.proposal?.base ?? null;
      } else {
        const loc = this.ctx.locate(id);
        if (!loc) return undefined;
        bytes += loc.size;
        base = loc.codec === Codec.Delta ? loc.base : null;
      }
      if (bytes > budget) return undefined;
      if (base === null) return depth;
      let deepest = depth;
      for (const b of deltaBases(base)) {
        const d = walk(b, depth + 1);
        if (d === undefined) return undefined;
        deepest = Math.max(deepest, d);
      }
      return deepest;
    };
    let depth = 0;
    for (const id of ids) {
      const d = walk(id, 0);
      if (d === undefined) return undefined;
      depth = Math.max(depth, d);
    }
    return { depth, bytes };
  }

  /** The object `links` single-base delta links below `id`; undefined where its chain ends sooner or branches. */
  private ancestor(id: Buffer, links: number): Buffer | undefined {
    let cur = id;
    for (let i = 0; i < links; i++) {
      const p = this.ctx.open.get(cur.toString('latin1'));
      let base: Buffer | null | undefined;
      if (p) base = p.delta?.base ?? p.proposal?.base;
      else {
        const loc = this.ctx.locate(cur);
        base = loc?.codec === Codec.Delta ? loc.base : undefined;
      }
      if (!base || base.length !== 32) return undefined;
      cur = base;
    }
    return cur;
  }

  /**
   * The bases' bytes back to back (a delta's prefix), in one buffer reused prefix after prefix:
   * zstd reads (or copies) it only during the call that is given it. Undefined if one cannot
   * be read.
   */
  private prefixOf(ids: Buffer[]): Buffer | undefined {
    const key = ids.length === 1 ? ids[0]! : Buffer.concat(ids);
    if (this.lastPrefix?.key.equals(key)) return this.lastPrefix.bytes;
    this.lastPrefix = undefined;
    let off = 0;
    for (const b of ids) {
      // Each base is copied before the next is read: a borrowed base is valid until the next borrow.
      const bytes = this.bytesOf(b);
      if (!bytes) return undefined;
      if (this.prefixBuf.length < off + bytes.length) {
        const bigger = Buffer.allocUnsafeSlow(Math.max(off + bytes.length, 2 * this.prefixBuf.length));
        this.prefixBuf.copy(bigger, 0, 0, off);
        this.prefixBuf = bigger;
      }
      off += bytes.copy(this.prefixBuf, off);
    }
    this.lastPrefix = { key: Buffer.from(key), bytes: this.prefixBuf.subarray(0, off) };
    return this.lastPrefix.bytes;
  }

  /** A base's bytes, as a view valid until the next read of a base; undefined if it cannot be read. */
  private bytesOf(id: Buffer): Buffer | undefined {
    const p = this.ctx.open.get(id.toString('latin1'));
    if (p && !p.delta) return p.group.buf.subarray(p.offset, p.offset + p.length);
    try {
      return p ? this.decoded(p) : this.ctx.borrow(id);
    } catch (e) {
      // A damaged base is no base: the object is stored whole.
      if (e instanceof LayerFsError) return undefined;
      throw e;
    }
  }
}
