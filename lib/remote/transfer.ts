/**
 * Moving the objects of some states between a Store and a remote, in both directions: negotiate
 * (walk.ts), then send the missing objects in post-order, in batches of about BATCH_BYTES
 * canonical bytes, each batch one transaction on the receiving side. Frames travel as stored;
 * a delta travels as a delta only when its bases are on the receiving side already or sent
 * before it, else decoded (wholeFrame). An interrupted transfer leaves whole batches behind,
 * each closed under "children first", so the next one skips them.
 */
import { baseIds, Codec, FrameSource, insertFrameStream, wholeFrame, type ChildRef, type Frame, type Store } from '../store/index.js';
import type { RemoteObjects, RemoteLocator } from './pg-objects.js';
import { findMissing, findMissingLocally, keyOf, NEGOTIATION_BATCH, type Holder, type TreeSource } from './walk.js';

export const BATCH_BYTES = 16 * 1024 * 1024;
/**
 * A fetch stores batches of about this many stored bytes, each one local write transaction: few
 * and large enough that each commit leaves its WAL checkpoint to the Store's background
 * checkpointer (small commits checkpoint, with an fsync, inline).
 */
export const FETCH_BATCH_BYTES = 64 * 1024 * 1024;
/** Stored bytes per read from the remote within a fetch's transaction. */
export const FETCH_READ_BYTES = 16 * 1024 * 1024;

export interface TransferStats {
  /** Objects the receiver lacked and was sent. */
  objects: number;
  /** Stored bytes sent (frames as they travel). */
  bytes: number;
  /** Of those, objects sent decoded because their delta bases stay behind. */
  whole: number;
  /** Ids the receiver was asked about, in how many queries. */
  asked: number;
  queries: number;
  batches: number;
}

export interface TransferOptions {
  batchBytes?: number;
  /** Called after each batch landed. */
  onBatch?: (s: TransferStats) => void;
}

function batches(order: ChildRef[], sizeOf: (r: ChildRef) => number, limit: number): ChildRef[][] {
  const out: ChildRef[][] = [];
  let cur: ChildRef[] = [];
  let bytes = 0;
  for (const r of order) {
    cur.push(r);
    bytes += sizeOf(r);
    if (bytes >= limit) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
  }
  if (cur.length) out.push(cur);
  return out;
}

export interface PushTransferOptions extends TransferOptions {
  /**
   * Roots of states the remote holds whole (its heads this push starts from, held here too):
   * the negotiation then runs here, without a round trip per level (findMissingLocally).
   */
  known?: Buffer[];
  /** Runs inside the last batch's transaction (or alone when nothing is sent): the head moves. */
  finish?: () => Promise<void>;
}

/** Sends the objects of the states `roots` that the remote lacks. */
export async function pushObjects(store: Store, remote: RemoteObjects, roots: Buffer[], opts: PushTransferOptions = {}): Promise<TransferStats> {
  const local: TreeSource = {
    trees: async (refs) => new Map(refs.map((r) => [keyOf(r.id), store.objects.get(r.id, r.kind)])),
  };
  const m = (opts.known?.length ? await findMissingLocally(roots, opts.known, local) : undefined) ?? (await findMissing(roots, local, remote));
  const stats: TransferStats = { objects: 0, bytes: 0, whole: 0, asked: m.asked, queries: m.queries, batches: 0 };
  const src = new FrameSource(store);
  const pos = new Map(m.order.map((r, i) => [keyOf(r.id), i]));
  const unknown: Buffer[] = [];
  for (const r of m.order) {
    const loc = src.locator(r.id);
    if (loc?.codec !== Codec.Delta) continue;
    for (const b of baseIds(loc.base)) if (!pos.has(keyOf(b)) && !m.present.has(keyOf(b))) unknown.push(b);
  }
  const there = new Set<string>(m.present);
  for (let i = 0; i < unknown.length; i += NEGOTIATION_BATCH) for (const k of await remote.has(unknown.slice(i, i + NEGOTIATION_BATCH))) there.add(k);
  stats.queries += Math.ceil(unknown.length / NEGOTIATION_BATCH);
  const whole = (id: Buffer, loc: { base: Buffer | null }) => {
    const at = pos.get(keyOf(id))!;
    const stays = baseIds(loc.base).some((b) => !there.has(keyOf(b)) && !((pos.get(keyOf(b)) ?? Infinity) < at));
    if (stays) stats.whole++;
    return stays;
  };
  const sizeOf = (r: ChildRef) => src.locator(r.id)?.length ?? 0;
  const all = batches(m.order, sizeOf, opts.batchBytes ?? BATCH_BYTES);
  for (const [i, batch] of all.entries()) {
    const frames = store.read(() => src.frames(batch.map((r) => r.id), whole));
    const w = await remote.writeBatch(frames, i === all.length - 1 ? opts.finish : undefined);
    stats.objects += batch.length;
    stats.bytes += w.bytes;
    stats.batches++;
    opts.onBatch?.(stats);
  }
  if (all.length === 0 && opts.finish) await remote.transaction(opts.finish);
  return stats;
}

/** Fetches the objects of the remote states `roots` that the Store lacks, re-hashing each. */
export async function fetchObjects(store: Store, remote: RemoteObjects, roots: Buffer[], opts: TransferOptions = {}): Promise<TransferStats> {
  const holder: Holder = {
    has: async (ids) => new Set(ids.filter((id) => store.objects.has(id)).map(keyOf)),
  };
  const m = await findMissing(roots, remote, holder);
  const stats: TransferStats = { objects: 0, bytes: 0, whole: 0, asked: m.asked, queries: m.queries, batches: 0 };
  const keys = m.order.map((r) => keyOf(r.id));
  const pos = new Map(keys.map((k, i) => [k, i]));
  const kinds = new Map(keys.map((k, i) => [k, m.order[i]!.kind as number]));
  // Locators first (small), to cut batches by stored size: a group frame counts once.
  const locs = await remote.locators(m.order.map((r) => r.id));
  const bases = new Set<string>();
  for (const l of locs.values()) if (l.codec === Codec.Delta) for (const b of baseIds(l.base)) bases.add(keyOf(b));
  const sizes = frameSizes(keys, locs);
  const sizeOf = (r: ChildRef) => sizes.get(keyOf(r.id)) ?? 0;
  const prepare = async (read: ChildRef[]): Promise<Frame[]> => {
    const frames: Frame[] = [];
    const viaFrame: RemoteLocator[] = [];
    for (const r of read) {
      const l = locs.get(keyOf(r.id));
      const at = pos.get(keyOf(r.id))!;
      const baseMissing = l && l.codec === Codec.Delta && baseIds(l.base).some((b) => !((pos.get(keyOf(b)) ?? Infinity) < at) && !store.objects.has(b));
      if (!l || baseMissing) {
        // Missing on the remote (canonical() names it) or a delta whose base stays behind.
        const data = (await remote.canonical([r.id])).get(keyOf(r.id))!;
        frames.push(wholeFrame(r.id, r.kind, data));
        stats.whole++;
      } else viaFrame.push(l);
    }
    const bytes = await remote.frameBytes(viaFrame, true);
    const byPlace = new Map<string, Frame>();
    for (const l of viaFrame) {
      const key = `${l.pack}:${l.offset}:${l.length}`;
      let f = byPlace.get(key);
      if (!f) {
        // A frame the remote cannot produce: the re-hash when it is stored names the object.
        f = { data: bytes.get(key) ?? Buffer.alloc(0), members: [] };
        byPlace.set(key, f);
        frames.push(f);
      }
      f.members.push({ id: l.id, kind: l.kind, size: l.size, codec: l.codec, at: l.at, base: l.base });
    }
    return frames;
  };
  // Each transaction (about FETCH_BATCH_BYTES) is read in pieces of about FETCH_READ_BYTES:
  // piece k+1 is read from the remote while piece k is decoded, re-hashed and written, so
  // PostgreSQL and this process work at the same time.
  for (const txn of batches(m.order, sizeOf, opts.batchBytes ?? FETCH_BATCH_BYTES)) {
    const reads = batches(txn, sizeOf, FETCH_READ_BYTES);
    let i = 0;
    await insertFrameStream(store, () => (i < reads.length ? prepare(reads[i++]!) : undefined), {
      expectedKind: (id) => kinds.get(keyOf(id)),
      keep: (id) => bases.has(keyOf(id)),
      onRead: (frames) => {
        for (const f of frames) stats.bytes += f.data.length;
      },
    });
    remote.forget(txn.map((x) => x.id), locs);
    stats.objects += txn.length;
    stats.batches++;
    opts.onBatch?.(stats);
  }
  return stats;
}

/** Stored bytes each object brings, in order: a frame counts once, with the first of its members. */
function frameSizes(keys: string[], locs: Map<string, RemoteLocator>): Map<string, number> {
  const counted = new Set<string>();
  const sizes = new Map<string, number>();
  for (const k of keys) {
    const l = locs.get(k);
    const place = l ? `${l.pack}:${l.offset}` : '';
    sizes.set(k, l && !counted.has(place) ? l.length : 0);
    counted.add(place);
  }
  return sizes;
}
