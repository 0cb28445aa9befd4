/**
 * Authenticated reads of runs of consecutive chunks of a large file, for streaming readers (the
 * FUSE reader threads answer 1 MiB READs, ~64 chunks each). Reading chunk by chunk through the
 * ObjectReader costs a locator query per chunk, a copy of the whole pack row into a fresh buffer
 * (most of a cold read's page faults) and a cache entry per chunk; here a run takes one locator
 * query, and neighbouring chunks of a pack are cut from its row (the last two rows read are
 * kept), and no chunk is kept. Every chunk is still re-hashed against its id before any
 * byte of it is copied out. Chunks stored in another form (zstd frames, deltas), missing,
 * moved by a repack meanwhile, or damaged go through the ObjectReader, which reads them (again)
 * or fails with its typed error.
 */
import { objectId } from '../native/index.js';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { Codec } from './codec.js';
import { DOMAIN_TAGS, ObjectKind } from './object-id.js';
import type { ObjectReader } from './object-reader.js';
import type { Db } from './store-file.js';

/** A chunk of a run: its id and the length its extent records. */
export interface ChunkRef {
  readonly id: Buffer;
  readonly length: number;
}

/** Ids one locator query takes (well under SQLite's limit on bound parameters). */
const BATCH = 256;

const CHUNK_TAG = DOMAIN_TAGS[ObjectKind.Chunk];

/** [kind, size, codec, pack, offset, length] of a located chunk. */
type Row = [Buffer, number, number, number, number, number, number];

/** A stretch of neighbouring raw chunks in one pack row. */
interface Stretch {
  pack: number;
  offset: number;
  bytes: number;
  /** Indices into the run, in order. */
  first: number;
  count: number;
}

export class ChunkRunReader {
  private readonly locates = new Map<number, ReturnType<Db['prepare']>>();
  private readonly readPack;
  private readonly packs: { id: number; data: Buffer }[] = [];

  constructor(
    private readonly db: Db,
    private readonly objects: ObjectReader,
  ) {
    this.readPack = db.prepare('SELECT data FROM packs WHERE id = ?').pluck();
  }

  /**
   * A whole pack row, from the last two read: SQLite assembles a row's whole overflow chain even
   * for a substr(), and a READ that is not aligned with packs ends in the pack the next one
   * starts in.
   */
  private pack(id: number): Buffer | undefined {
    const hit = this.packs.find((p) => p.id === id);
    if (hit) return hit.data;
    const data = this.readPack.get(id) as Buffer | undefined;
    if (!data) return undefined;
    this.packs.unshift({ id, data });
    this.packs.length = Math.min(this.packs.length, 2);
    return data;
  }

  private locate(ids: Buffer[]): Map<string, Row> {
    const out = new Map<string, Row>();
    for (let i = 0; i < ids.length; i += BATCH) {
      const part = ids.slice(i, i + BATCH);
      let q = this.locates.get(part.length);
      if (!q) {
        q = this.db.prepare(`SELECT id, kind, size, codec, pack, offset, length FROM objects WHERE id IN (${'?,'.repeat(part.length - 1)}?)`).raw();
        this.locates.set(part.length, q);
      }
      for (const row of q.all(part) as Row[]) out.set(row[0].toString('latin1'), row);
    }
    return out;
  }

  /**
   * Copies `len` bytes of the concatenation of `run` (each chunk `length` bytes), starting
   * `from` bytes into its first chunk, to `dst` at `dstOff`. The run must cover the range.
   */
  read(run: readonly ChunkRef[], from: number, len: number, dst: Buffer, dstOff: number): void {
    const rows = this.locate(run.map((c) => c.id));
    let skip = from;
    let left = len;
    let o = dstOff;
    const put = (data: Buffer) => {
      const n = Math.min(data.length - skip, left);
      if (n > 0) data.copy(dst, o, skip, skip + n);
      o += Math.max(0, n);
      left -= Math.max(0, n);
      skip = Math.max(0, skip - data.length);
    };
    for (let i = 0; i < run.length && left > 0; ) {
      const s = this.stretch(run, rows, i);
      if (!s) {
        put(this.viaReader(run[i]!));
        i++;
        continue;
      }
      const row = this.pack(s.pack);
      const bytes = row && s.offset + s.bytes <= row.length ? row.subarray(s.offset, s.offset + s.bytes) : undefined;
      for (let k = 0, at = 0; k < s.count && left > 0; k++) {
        const c = run[s.first + k]!;
        const data = bytes && bytes.length === s.bytes ? bytes.subarray(at, at + c.length) : undefined;
        at += c.length;
        // A stretch that came back short, or a chunk that does not hash to its id (a repack
        // moved it meanwhile, or damage): the ObjectReader looks again and decides.
        put(data && objectId(CHUNK_TAG, data).equals(c.id) ? data : this.viaReader(c));
      }
      i = s.first + s.count;
    }
    if (left > 0) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'the chunk run does not cover the range read');
  }

  /** The stretch of raw chunks starting at run[i] (null when run[i] is not a located raw chunk). */
  private stretch(run: readonly ChunkRef[], rows: Map<string, Row>, i: number): Stretch | null {
    const raw = (c: ChunkRef): Row | undefined => {
      const r = rows.get(c.id.toString('latin1'));
      return r && r[1] === ObjectKind.Chunk && r[3] === Codec.Raw && r[2] === c.length && r[6] === c.length && r[5] >= 0 ? r : undefined;
    };
    const head = raw(run[i]!);
    if (!head) return null;
    const s: Stretch = { pack: head[4], offset: head[5], bytes: head[6], first: i, count: 1 };
    for (let k = i + 1; k < run.length; k++) {
      const r = raw(run[k]!);
      if (!r || r[4] !== s.pack || r[5] !== s.offset + s.bytes) break;
      s.bytes += r[6];
      s.count++;
    }
    return s;
  }

  private viaReader(c: ChunkRef): Buffer {
    const data = this.objects.get(c.id, ObjectKind.Chunk);
    if (data.length !== c.length) throw new LayerFsError('ERR_CORRUPT', `chunk ${toHex(c.id)} has ${data.length} bytes, its extent says ${c.length}`, { id: toHex(c.id), hint: 'run layerfs verify' });
    return data;
  }
}
