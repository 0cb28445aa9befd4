/**
 * Chain flattening in a repack: a delta whose chain is longer than one link is re-encoded against
 * the full object its chain ends at, so after a repack a read decodes at most one delta link
 * (reads at the end of a chain cost about what a whole object does; docs/FORMAT.md "Physical
 * forms"). Writers still chain up to DELTA_MAX_DEPTH links between repacks.
 */
import { zstdCompress } from '../native/zstd.js';
import { LayerFsError } from '../errors.js';
import { Codec, DELTA_LEVEL, DELTA_MAX_DEPTH, KEEP_DELTA, KEEP_TREE_DELTA } from './codec.js';
import type { Db } from './store-file.js';
import { ObjectKind } from './object-id.js';
import type { ObjectReader } from './object-reader.js';
import type { Planned } from './repack-rows.js';

/** What to do with one delta: keep its frame, store a new frame against `base`, or store it whole. */
export type DeltaPlan = { copy: true } | { frame: Buffer; base: Buffer; data?: undefined } | { data: Buffer; frame?: undefined };

/** Roots' bytes kept while a batch flattens: the versions of one file share their root. */
const ROOTS_KEPT = 64;

export class ChainFlattener {
  private readonly locate;
  private readonly roots = new Map<string, Buffer>();
  flattened = 0;
  madeWhole = 0;

  constructor(
    db: Db,
    private readonly reader: ObjectReader,
  ) {
    this.locate = db.prepare('SELECT codec, base FROM objects WHERE id = ?');
  }

  plan(p: Planned): DeltaPlan {
    if (!p.base || p.base.length !== 32) return { copy: true };
    const root = this.rootOf(p.base);
    if (!root || root.equals(p.base)) return { copy: true };
    let data: Buffer;
    let rootBytes: Buffer;
    try {
      data = this.reader.get(p.id);
      rootBytes = this.rootBytes(root);
    } catch (e) {
      // A damaged chain stays as it is, where a read or verify reports it.
      if (e instanceof LayerFsError) return { copy: true };
      throw e;
    }
    const frame = zstdCompress(data, DELTA_LEVEL, rootBytes);
    const keep = p.kind === ObjectKind.Blob || p.kind === ObjectKind.Chunk ? KEEP_DELTA : KEEP_TREE_DELTA;
    if (frame.length <= p.size * keep) {
      this.flattened++;
      return { frame, base: root };
    }
    this.madeWhole++;
    return { data };
  }

  /** The full object a single-base chain from `id` ends at; undefined where it branches or is damaged. */
  private rootOf(id: Buffer): Buffer | undefined {
    let cur = id;
    for (let i = 0; i <= 2 * DELTA_MAX_DEPTH; i++) {
      const loc = this.locate.get(cur) as { codec: number; base: Buffer | null } | undefined;
      if (!loc) return undefined;
      if (loc.codec !== Codec.Delta) return cur;
      if (!loc.base || loc.base.length !== 32) return undefined;
      cur = loc.base;
    }
    return undefined;
  }

  private rootBytes(id: Buffer): Buffer {
    const key = id.toString('latin1');
    let b = this.roots.get(key);
    if (!b) {
      b = this.reader.get(id);
      this.roots.set(key, b);
      if (this.roots.size > ROOTS_KEPT) this.roots.delete(this.roots.keys().next().value!);
    }
    return b;
  }
}
