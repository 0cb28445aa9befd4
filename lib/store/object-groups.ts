/**
 * The pieces an ObjectWriter (object-writer.ts) assembles before it writes: objects waiting in
 * open groups, sealed groups and delta frames collected into the parts of a pack row.
 */
import type { ObjectKind } from './object-id.js';
import type { Dictionary } from './dictionary.js';
import { ROW_TARGET, TREE_ROW_TARGET } from './schema.js';

/**
 * A delta being compressed on the addon's threads (DeltaPlanner.start): its job, its bases (and
 * their ids concatenated, as the index stores them) and the chain depth it makes; `prefix`, the
 * bases' bytes, only while it is planned.
 */
export interface DeltaProposal {
  job: number;
  /** The frame, when compressed at once instead of on the addon's threads (DeltaPlanner.start). */
  frame?: Buffer;
  ids: Buffer[];
  base: Buffer;
  depth: number;
  level: number;
  prefix: Buffer | undefined;
}

/** An object written by this writer and not yet in the index. */
export interface Pending {
  id: Buffer;
  kind: ObjectKind;
  group: Group;
  /** Where its bytes are in the group's buffer. */
  offset: number;
  length: number;
  /**
   * Set when it moved out of its group to be stored as a delta: `base` the ids of its bases,
   * concatenated (docs/FORMAT.md "Physical forms", codec 2). Its bytes are not kept: the rare
   * read of an unflushed delta decodes its frame (DeltaPlanner.decoded), where a copy of every
   * delta's bytes was about a quarter of a large commit's garbage.
   */
  delta?: { base: Buffer; frame: Buffer; depth: number };
  /** A delta still being compressed (ObjectWriter.proposeBase), judged when its group is sealed. */
  proposal?: DeltaProposal;
}

const EMPTY = Buffer.alloc(0);

/**
 * Small objects collect in open groups, one per class: file content, tree objects (pages,
 * roots, extent nodes) and content that looks random. A full group is sealed into one frame
 * (zstd unless it is the random class or compression does not pay) of the row being assembled;
 * a read of one small object decodes its frame only. Its buffer is never reused, so objects of a
 * sealed group stay readable until their row is written.
 */
export class Group {
  /**
   * Allocated at the first append: a writer opens a group of each class and a new one at every
   * seal, so a small commit's writer would otherwise allocate (and fault in) 260 KiB or more of
   * buffers it never fills: 1 ms of a 4 KiB overwrite's commitSync in a CPU profile.
   */
  buf: Buffer = EMPTY;
  bytes = 0;
  items: Pending[] = [];
  moved = 0;
  /** Items with a delta proposal not judged yet (judged at the seal of the next group of its class, or at flush). */
  proposals = 0;
  sealed = false;

  constructor(
    readonly compress: boolean,
    readonly target: number,
    private readonly pool?: GroupBuffers,
  ) {}

  /**
   * The objects still in this sealed group (those not moved out as deltas) and their bytes back
   * to back with their offsets; undefined when none is left. When some moved out, the rest move
   * together in the group's own buffer (nothing reads a moved object's bytes from it: an
   * unflushed delta is read from its frame), and each keeps its new offset: a copy of them was
   * a buffer per sealed group kept until its row was written, 8.9 MiB of a whole-tree commit's
   * garbage in the mount daemon.
   */
  live(): { live: Pending[]; at: number[]; data: Buffer } | undefined {
    const live = this.moved ? this.items.filter((p) => !p.delta) : this.items;
    if (live.length === 0) return undefined;
    if (this.moved !== 0) {
      let pos = 0;
      for (const p of live) {
        // Offsets only grow in `items`, so each object moves towards the start, over bytes no longer needed.
        if (p.offset !== pos) this.buf.copyWithin(pos, p.offset, p.offset + p.length);
        p.offset = pos;
        pos += p.length;
      }
      this.items = live;
      this.moved = 0;
      this.bytes = pos;
    }
    return { live, at: live.map((p) => p.offset), data: this.buf.subarray(0, this.bytes) };
  }

  append(data: Uint8Array): number {
    if (this.bytes + data.length > this.buf.length) {
      const first = this.buf.length === 0 ? this.target + 16 * 1024 : 2 * this.buf.length;
      const size = Math.max(first, this.bytes + data.length);
      const bigger = this.pool?.take(size) ?? Buffer.allocUnsafe(size);
      this.buf.copy(bigger, 0, 0, this.bytes);
      this.pool?.give(this.buf);
      this.buf = bigger;
    }
    this.buf.set(data, this.bytes);
    const at = this.bytes;
    this.bytes += data.length;
    return at;
  }
}

/** Bytes of group buffers kept for reuse: more than the groups of the rows in flight hold. */
const SPARE_BYTES = 4 * 1024 * 1024;

/**
 * Buffers of groups whose rows are written, for the next groups of the same size: a new buffer
 * per group was about a sixth of a large commit's garbage (161 MB on the real tree's release
 * upgrade), which V8 frees only after tens of MiB of it.
 */
export class GroupBuffers {
  private free: Buffer[] = [];
  private bytes = 0;

  /** The smallest spare buffer of at least `size` bytes (contents undefined), if one is kept. */
  take(size: number): Buffer | undefined {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const n = this.free[i]!.length;
      if (n >= size && (best < 0 || n < this.free[best]!.length)) best = i;
    }
    if (best < 0) return undefined;
    const buf = this.free[best]!;
    this.free[best] = this.free[this.free.length - 1]!;
    this.free.pop();
    this.bytes -= buf.length;
    return buf;
  }

  /** Keeps `buf` for a later group, within SPARE_BYTES; its bytes must no longer be needed. */
  give(buf: Buffer): void {
    if (buf.length === 0) return;
    while (this.bytes + buf.length > SPARE_BYTES && this.free.length > 0) {
      // The smallest goes first: a larger buffer serves any group.
      let least = 0;
      for (let i = 1; i < this.free.length; i++) if (this.free[i]!.length < this.free[least]!.length) least = i;
      if (this.free[least]!.length >= buf.length) return;
      this.bytes -= this.free[least]!.length;
      this.free[least] = this.free[this.free.length - 1]!;
      this.free.pop();
    }
    if (this.bytes + buf.length > SPARE_BYTES) return;
    this.free.push(buf);
    this.bytes += buf.length;
  }

  /** Gives back the buffer of group `g`, sealed and written: none of its objects is read from it again. */
  release(g: Group): void {
    this.give(g.buf);
    g.buf = EMPTY;
  }
}

export const enum GroupClass {
  Content = 0,
  Tree = 1,
  Random = 2,
  /**
   * The few new chunks of an edited large file (putChunks): held unsealed until the editor's
   * delta hint arrives after the whole file is written, when a content group would already have
   * sealed all but the last.
   */
  Edit = 3,
}

/** Canonical bytes an Edit group holds before it is sealed: about EDIT_CHUNKS average chunks. */
export const EDIT_GROUP_TARGET = 128 * 1024;

export interface ChainInfo {
  /** Delta links from this object to a full one. */
  depth: number;
  /** Bytes decoded along the way, this object included. */
  bytes: number;
}

/**
 * A part of the row being assembled: a sealed group (its plain bytes, the background
 * compression job of it or its frame compressed already, if any, and the dictionary it is
 * compressed with, if any: the row names it, and compresses the group again with it when the
 * job's result is gone) or one delta frame.
 */
export type RowPart = { live: Pending[]; at: number[]; data: Buffer; job: number | undefined; frame?: Buffer; dict: Dictionary | undefined; group?: Group } | { delta: Pending };

/** Compressed groups are counted at this fraction of their size towards ROW_TARGET until their frame is known. */
export const EXPECTED_RATIO = 0.4;
/** The parts of one pack row being assembled, and the stored bytes they are expected to take. */
export class RowAssembly {
  parts: RowPart[] = [];
  bytes = 0;

  constructor(readonly target: number) {}

  /** Adds a part expected to store `expected` bytes; true once the row is full. */
  add(part: RowPart, expected: number): boolean {
    this.parts.push(part);
    this.bytes += expected;
    return this.bytes >= this.target;
  }

  /** Moves the parts of `other` into this row. */
  absorb(other: RowAssembly): void {
    this.parts.push(...other.parts);
    this.bytes += other.bytes;
    other.take();
  }

  /** The parts; the assembly starts empty again. */
  take(): RowPart[] {
    const parts = this.parts;
    this.parts = [];
    this.bytes = 0;
    return parts;
  }
}

/** Complete rows kept back so the compression thread finishes their frames meanwhile. */
export const ROWS_IN_FLIGHT = 2;

/**
 * The rows a writer assembles from sealed groups and deltas: mixed rows (content groups and
 * deltas) and tree rows of their own, smaller (a cold page read loads its whole row). A
 * complete row waits until ROWS_IN_FLIGHT newer rows are complete before `write` takes it
 * (with the frames of its groups from the compression thread): written at once, its last
 * group's frame was just started, and the writer waited for it (docs/DESIGN.md).
 */
export class RowQueue {
  private readonly mixed: RowAssembly;
  private readonly trees = new RowAssembly(TREE_ROW_TARGET);
  private readonly ready: RowPart[][] = [];

  /** `compress`: rows of about ROW_TARGET stored bytes; otherwise each group is a row of its own. */
  constructor(
    compress: boolean,
    private readonly write: (parts: RowPart[]) => void,
  ) {
    this.mixed = new RowAssembly(compress ? ROW_TARGET : 0);
  }

  /** Adds a part expected to store `expected` bytes to the mixed row, or to the tree row if `tree`. */
  add(part: RowPart, expected: number, tree = false): void {
    const a = tree ? this.trees : this.mixed;
    if (a.add(part, expected)) this.complete(a);
  }

  /** Writes every row, the ones being assembled included. */
  flush(): void {
    // A small transaction (a commit) writes one row: another row would leave its own slack.
    if (this.trees.parts.length > 0 && this.mixed.bytes + this.trees.bytes <= this.mixed.target) this.mixed.absorb(this.trees);
    this.complete(this.trees);
    this.complete(this.mixed);
    for (const parts of this.ready.splice(0)) this.write(parts);
  }

  private complete(a: RowAssembly): void {
    if (a.parts.length === 0) return;
    this.ready.push(a.take());
    if (this.ready.length > ROWS_IN_FLIGHT) this.write(this.ready.shift()!);
  }
}
/** The same for tree groups (pages, mostly ids, compress to ~0.57×). */
export const TREE_EXPECTED_RATIO = 0.6;

/**
 * Chunks [from, to) of `data` copied into a sealed group of their own (no delta hint applies to
 * them), their ids too (views of the caller's reused buffer), for a row written later (held or
 * staged) while the caller's buffer is reused at once.
 */
export function copyChunks(data: Buffer, chunks: Pending[], from: number, to: number): Pending[] {
  const first = chunks[from]!.offset;
  const last = chunks[to - 1]!;
  const g = new Group(false, 0);
  g.buf = Buffer.from(data.subarray(first, last.offset + last.length));
  g.sealed = true;
  return chunks.slice(from, to).map((c) => ({ ...c, id: Buffer.from(c.id), group: g, offset: c.offset - first }));
}

/**
 * Chunks copied for a row written later (copyChunks), findable in `open` (a writer's unflushed
 * objects) until `write` writes them (through `writeRow`) or `drop` gives up on them.
 */
export function keptChunks(open: Map<string, Pending>, moved: Pending[], writeRow: (moved: Pending[]) => void): { write: () => void; drop: () => void } {
  for (const c of moved) open.set(c.id.toString('latin1'), c);
  const drop = () => {
    for (const c of moved) open.delete(c.id.toString('latin1'));
  };
  return {
    write: () => {
      writeRow(moved);
      drop();
    },
    drop,
  };
}

/** The bytes of chunks [from, to) of `data`, `bytes` in all: a view, or joined in `into` (valid until its next join). */
export function slice(data: Buffer, chunks: Pending[], from: number, to: number, bytes: number, into: RowBuffer): Buffer {
  const first = chunks[from]!;
  const last = chunks[to - 1]!;
  if (last.offset + last.length - first.offset === bytes) return data.subarray(first.offset, first.offset + bytes);
  return into.join(
    chunks.slice(from, to).map((c) => data.subarray(c.offset, c.offset + c.length)),
    bytes,
  );
}

/**
 * A pack row's parts back to back, in a buffer reused row after row (SQLite copies bound bytes):
 * a new Buffer per row left a transaction's whole output behind as garbage, which V8 collects
 * only after tens of MiB of it.
 */
export class RowBuffer {
  private buf = Buffer.alloc(0);

  join(parts: Buffer[], bytes: number): Buffer {
    if (parts.length === 1) return parts[0]!;
    if (this.buf.length < bytes) this.buf = Buffer.allocUnsafeSlow(Math.max(bytes, 2 * this.buf.length));
    let off = 0;
    for (const p of parts) off += p.copy(this.buf, off);
    return this.buf.subarray(0, bytes);
  }
}

/**
 * Delta proposals of a large file's new chunks being compressed on the addon's threads at once
 * (putChunks): enough to keep its threads busy while this one plans the next, few enough that a
 * file whose deltas never pay gives up soon after (ChunkDeltaSource).
 */
export const CHUNK_PROPOSALS_AHEAD = 8;

/** The group of an object stored as a delta: none (sealed, empty). */
export const DETACHED = new Group(false, 0);
DETACHED.sealed = true;
