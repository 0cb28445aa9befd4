/**
 * A fetch of everything a remote holds into a Store that holds no object yet (a clone of the
 * whole remote). There is nothing to negotiate: the receiver lacks every object. So instead of
 * walking the states level by level (a round trip per level, then one for the index rows, then
 * the frames), this streams the remote's pack rows, each with its index rows, in one COPY, in
 * the order pushes wrote them, storing frames as they arrive while PostgreSQL keeps sending.
 *
 * What the walk guaranteed is checked on the way instead (docs/REMOTES.md "Clone"): every object
 * is decoded and re-hashed as it is stored (FrameWriter); every tree object's references are
 * read from its re-hashed bytes and must name objects of the referred kind; a batch commits only
 * when every reference met so far is satisfied (so the Store holds an object only with everything
 * below it); at the end every root must be there. A delta whose base arrives later (a concurrent
 * push stored the base in a later pack row) waits for it in memory; a base stored already is read
 * back from the Store.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { baseIds, childrenOf, Codec, FrameWriter, ObjectKind, type Frame, type ObjectForm, type Store } from '../store/index.js';
import type { RemoteObjects } from './pg-objects.js';
import { FETCH_BATCH_BYTES, type TransferOptions, type TransferStats } from './transfer.js';
import { keyOf } from './walk.js';

const isTree = (k: number) => k === ObjectKind.Root || k === ObjectKind.Page || k === ObjectKind.Extents;

function corrupt(remote: string, id: Buffer, why: string): LayerFsError {
  return new LayerFsError('ERR_CORRUPT', `object ${toHex(id)} on the remote ${remote} ${why}`, { id: toHex(id), hint: 'the remote holds damaged, forged or incomplete data; nothing of it became reachable' });
}

/**
 * The references met so far: the kind of every object stored by this fetch, and the objects
 * referred to but not stored yet, with the kind their referrer requires.
 */
class Closure {
  readonly kinds = new Map<string, number>();
  readonly pending = new Map<string, { kind: number; id: Buffer }>();

  constructor(
    private readonly remote: string,
    /** Whether the Store held the object before (then it is not stored again, and trusted). */
    private readonly held: (id: Buffer) => boolean,
  ) {}

  has(id: Buffer): boolean {
    return this.kinds.has(keyOf(id)) || this.held(id);
  }

  /** An object stored: it satisfies the references to it; a tree's own references are noted. */
  stored(m: ObjectForm, data: Buffer): void {
    const key = keyOf(m.id);
    const want = this.pending.get(key);
    if (want && want.kind !== m.kind) throw corrupt(this.remote, m.id, `is of kind ${m.kind} where kind ${want.kind} is referred to`);
    this.pending.delete(key);
    this.kinds.set(key, m.kind);
    if (isTree(m.kind)) for (const c of childrenOf(m.kind, data, m.id)) this.refer(c.id, c.kind);
  }

  refer(id: Buffer, kind: number): void {
    const key = keyOf(id);
    const got = this.kinds.get(key) ?? this.pending.get(key)?.kind;
    if (got === undefined && this.held(id)) return;
    if (got === undefined) this.pending.set(key, { kind, id: Buffer.from(id) });
    else if (got !== kind) throw corrupt(this.remote, id, `is referred to as kind ${kind} and as kind ${got}`);
  }

  /** The first reference still unsatisfied, if any. */
  missing(): Buffer | undefined {
    for (const p of this.pending.values()) return p.id;
    return undefined;
  }
}

/** Bytes of one index record before its base ids (packRowsIndexed): id, kind, size, codec, offset, length, at, base length. */
const RECORD_HEAD = 32 + 2 + 4 + 2 + 4 + 4 + 4 + 2;

/**
 * Frames of one pack row from its index records, by place (members of a group frame together).
 * A record that does not parse ends the row: objects it would have named are then missing, and
 * the closure names them.
 */
function framesOf(remote: RemoteObjects, data: Buffer, idx: Buffer): Frame[] {
  const out: Frame[] = [];
  let cur: Frame | undefined;
  let place = -1;
  let placeLength = -1;
  for (let at = 0; at + RECORD_HEAD <= idx.length; ) {
    const baseLength = idx.readUInt16BE(at + RECORD_HEAD - 2);
    if (at + RECORD_HEAD + baseLength > idx.length) break;
    const l = {
      id: idx.subarray(at, at + 32),
      kind: idx.readInt16BE(at + 32),
      size: idx.readInt32BE(at + 34),
      codec: idx.readInt16BE(at + 38),
      offset: idx.readInt32BE(at + 40),
      length: idx.readInt32BE(at + 44),
      at: idx.readInt32BE(at + 48),
      base: baseLength ? idx.subarray(at + RECORD_HEAD, at + RECORD_HEAD + baseLength) : null,
    };
    at += RECORD_HEAD + baseLength;
    if (!cur || l.offset !== place || l.length !== placeLength) {
      cur = { data: remote.frameIn(data, l), members: [] };
      out.push(cur);
      place = l.offset;
      placeLength = l.length;
    }
    cur.members.push({ id: l.id, kind: l.kind, size: l.size, codec: l.codec, at: l.at, base: l.base });
  }
  return out;
}

/** Frames whose delta base or dictionary is not stored yet, by the first such base. */
class Waiting {
  private readonly byBase = new Map<string, Frame[]>();
  count = 0;

  constructor(private readonly closure: Closure) {}

  /** The first base of `f`'s members not stored yet. */
  blocker(f: Frame): string | undefined {
    for (const m of f.members) {
      if (m.codec !== Codec.Delta && m.codec !== Codec.Dict) continue;
      for (const b of baseIds(m.base)) if (!this.closure.has(b)) return keyOf(b);
    }
    return undefined;
  }

  wait(base: string, f: Frame): void {
    const list = this.byBase.get(base);
    if (list) list.push(f);
    else this.byBase.set(base, [f]);
    this.count++;
  }

  /** Frames that were waiting for `key`, now free to try again. */
  release(key: string): Frame[] {
    const list = this.byBase.get(key);
    if (!list) return [];
    this.byBase.delete(key);
    this.count -= list.length;
    return list;
  }

  first(): Frame | undefined {
    for (const list of this.byBase.values()) return list[0];
    return undefined;
  }
}

/** Stores one frame, or parks it until its bases are stored; then whatever waited on it. */
function place(fw: FrameWriter, waiting: Waiting, first: Frame): void {
  const todo = [first];
  while (todo.length > 0) {
    const f = todo.pop()!;
    const base = waiting.blocker(f);
    if (base !== undefined) {
      waiting.wait(base, f);
      continue;
    }
    fw.add(f);
    for (const m of f.members) todo.push(...waiting.release(keyOf(m.id)));
  }
}

/** Fetches every object of the remote into `store` (which holds none), checking `roots` are among them. */
export async function fetchAllObjects(store: Store, remote: RemoteObjects, name: string, roots: Buffer[], opts: TransferOptions = {}): Promise<TransferStats> {
  const stats: TransferStats = { objects: 0, bytes: 0, whole: 0, asked: 0, queries: 1, batches: 0 };
  // The Store held nothing when this began (a clone): what it holds is what the closure stored,
  // so neither the closure nor the writer asks SQLite per object.
  const empty = !store.hasObjects();
  const closure = new Closure(name, empty ? () => false : (id) => store.objects.has(id));
  const waiting = new Waiting(closure);
  const rows = remote.packRowsIndexed();
  const limit = opts.batchBytes ?? FETCH_BATCH_BYTES;
  let done = false;
  try {
    while (!done) {
      const fresh = await store.write(async (w) => {
        // Decoded bytes are not kept: a delta's base is read back from the Store (the writer
        // writes its pending pack row first), since which objects are bases is not known ahead.
        const fw = new FrameWriter(store.db, w.stats, {
          expectedKind: (id) => closure.pending.get(keyOf(id))?.kind,
          keep: () => false,
          held: empty ? (id) => closure.kinds.has(keyOf(id)) : undefined,
          baseOf: (id) => store.objects.get(id),
          onObject: (m, data) => closure.stored(m, data),
        });
        let bytes = 0;
        // A batch ends past its size where nothing it holds refers to an object still to come.
        while (bytes < limit || closure.pending.size > 0 || waiting.count > 0) {
          const r = await rows.next();
          if (r.done) {
            done = true;
            break;
          }
          const [data, idx] = r.value;
          for (const f of framesOf(remote, data, idx)) {
            place(fw, waiting, f);
            bytes += f.data.length;
            stats.bytes += f.data.length;
          }
        }
        if (done) finalCheck(name, closure, waiting, roots);
        fw.writeRow();
        return fw.fresh;
      });
      stats.objects += fresh;
      stats.batches++;
      opts.onBatch?.(stats);
    }
  } finally {
    await rows.return(undefined);
  }
  return stats;
}

/** At the end of the stream: nothing waits, nothing referred to is missing, every root is there. */
function finalCheck(name: string, closure: Closure, waiting: Waiting, roots: Buffer[]): void {
  const parked = waiting.first();
  if (parked) throw corrupt(name, parked.members[0]!.id, 'is a delta whose base the remote does not hold');
  const gone = closure.missing();
  if (gone) throw corrupt(name, gone, 'is referred to but missing');
  for (const r of roots) {
    const kind = closure.kinds.get(keyOf(r));
    if (kind === undefined && closure.has(r)) continue;
    if (kind !== ObjectKind.Root) throw corrupt(name, r, kind === undefined ? 'is a state root the remote does not hold' : 'is a state root of another kind');
  }
}
