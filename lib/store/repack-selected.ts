/**
 * Writes the small files of one repack batch in the form the selection planned (repack-bases.ts),
 * checked against the Store as the batch finds it: a delta is written only if its base is in its
 * final form (pulled into this batch if not), its chain does not reach the object itself and
 * stays within DELTA_MAX_DEPTH links now, and the frame is within the plan's limit (checked by the
 * batch when it takes the frame, SelectedSink). Otherwise the object is stored whole, which never makes a chain longer or a cycle. Every batch is one
 * transaction, so a crash leaves each object in its old form or its new one.
 */
import { zstdCompressStart } from '../native/zstd.js';
import { LayerFsError } from '../errors.js';
import { Codec, DELTA_LEVEL, DELTA_MAX_DEPTH } from './codec.js';
import type { Db } from './store-file.js';
import type { ObjectReader } from './object-reader.js';
import type { Selection } from './repack-bases.js';
import type { Planned } from './repack-rows.js';

/**
 * Where a batch puts what this writes. A delta is started on the addon's compression threads
 * (`job`); the batch takes its frame later and stores it if it is within `limit` and
 * KEEP_COMPRESSED of `data`, else stores `data` whole. Meanwhile this takes it for a delta, which
 * can only overstate the chains built on it.
 */
export interface SelectedSink {
  delta(p: Planned, data: Buffer, job: number, base: Buffer, limit: number): void;
  whole(p: Planned, data: Buffer): void;
  /** The object as it is (it could not be read: its damage stays where verify finds it). */
  asIs(p: Planned): void;
}

export class SelectedWriter {
  private readonly locate;
  /** Forms written in this batch: the base id (a delta started), or null for whole. */
  private readonly pending = new Map<string, Buffer | null>();

  constructor(
    db: Db,
    private readonly reader: ObjectReader,
    private readonly sel: Selection,
    private readonly sink: SelectedSink,
  ) {
    this.locate = db.prepare('SELECT id, kind, size, codec, pack, offset, length, at, base FROM objects WHERE id = ?');
  }

  has(id: Buffer): boolean {
    return this.sel.forms.has(id.toString('latin1'));
  }

  /** Writes `p` in its planned form, or whole (module comment); once per batch. */
  write(p: Planned): void {
    const key = p.id.toString('latin1');
    if (this.pending.has(key)) return;
    this.pending.set(key, null);
    let data: Buffer;
    try {
      data = this.reader.get(p.id);
    } catch (e) {
      if (!(e instanceof LayerFsError)) throw e;
      this.pending.delete(key);
      this.sink.asIs(p);
      return;
    }
    const form = this.sel.forms.get(key);
    const job = form?.base ? this.deltaAgainst(p, data, form.base) : undefined;
    if (job !== undefined) {
      this.pending.set(key, form!.base);
      this.sink.delta(p, data, job, form!.base!, form!.limit);
    } else this.sink.whole(p, data);
  }

  /** Forgets this batch's forms when it was undone: its objects stay as they were. */
  discard(): void {
    this.pending.clear();
  }

  /** Marks this batch's objects done once it committed: a later batch never moves them again. */
  committed(): void {
    for (const k of this.pending.keys()) this.sel.done.add(k);
    this.pending.clear();
  }

  /** The compression job of `data` as a delta against `base`, if its chain allows one. */
  private deltaAgainst(p: Planned, data: Buffer, base: Buffer): number | undefined {
    if (!this.ready(base)) return undefined;
    const depth = this.depthOf(base, p.id);
    if (depth === undefined || depth + 1 > DELTA_MAX_DEPTH) return undefined;
    let baseBytes: Buffer;
    try {
      baseBytes = this.reader.get(base);
    } catch (e) {
      if (e instanceof LayerFsError) return undefined;
      throw e;
    }
    return zstdCompressStart(data, DELTA_LEVEL, undefined, baseBytes);
  }

  /** Whether `id` is (or is now made) in its final form; false if it is gone. */
  private ready(id: Buffer): boolean {
    const key = id.toString('latin1');
    if (this.pending.has(key) || this.sel.done.has(key)) return true;
    const loc = this.locate.get(id) as Planned | undefined;
    if (!loc) return false;
    const form = this.sel.forms.get(key);
    if (!form) return true;
    const final = form.base ? loc.codec === Codec.Delta && loc.base !== null && loc.base.equals(form.base) : loc.codec !== Codec.Delta;
    if (!final) this.write(loc);
    return true;
  }

  /** Links from `id` to a whole object as this batch leaves the Store; undefined if the chain reaches `avoid`, is gone or too long. */
  private depthOf(id: Buffer, avoid: Buffer): number | undefined {
    let cur = id;
    for (let depth = 0; depth <= DELTA_MAX_DEPTH; depth++) {
      if (cur.equals(avoid)) return undefined;
      const key = cur.toString('latin1');
      let base: Buffer | null;
      if (this.pending.has(key)) base = this.pending.get(key)!;
      else {
        const loc = this.locate.get(cur) as Planned | undefined;
        if (!loc) return undefined;
        base = loc.codec === Codec.Delta ? loc.base : null;
      }
      if (base === null) return depth;
      if (base.length !== 32) return undefined;
      cur = base;
    }
    return undefined;
  }
}
