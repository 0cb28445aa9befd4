/**
 * The remote's objects: presence queries (negotiation), frames read as stored, objects decoded
 * and re-hashed (a remote is untrusted), and batches of frames written in one transaction each.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { baseIds, Codec, decodeForm, type ChildRef, type Frame, type ObjectForm, type Store } from '../store/index.js';
import type { RemoteConnection } from './connection.js';
import { int4, int8Array, int8Text, parseBinaryCopy } from './copy-binary.js';
import { keyOf, type Holder, type TreeSource } from './walk.js';

export interface RemoteLocator extends ObjectForm {
  pack: string;
  offset: number;
  length: number;
  /** Stored bytes of the whole pack row (where known): whether to read it whole. */
  packBytes?: number;
}

/** Stored bytes per remote pack row written by a push. */
const PACK_ROW_TARGET = 1024 * 1024;
/** Ids per locator query. */
const LOCATE_BATCH = 16384;

const placeKey = (l: RemoteLocator) => `${l.pack}:${l.offset}:${l.length}`;

/** A locator from a row of locators()' COPY (null: a malformed row, which then counts as missing). */
function locatorOf(row: (Buffer | null)[]): RemoteLocator | null {
  const [id, kind, size, codec, pack, offset, length, at, base, packBytes] = row;
  if (!id || id.length !== 32 || !kind || !size || !codec || !pack || !offset || !length || !at) return null;
  return { id: Buffer.from(id), kind: int4(kind), size: int4(size), codec: int4(codec), pack: int8Text(pack), offset: int4(offset), length: int4(length), at: int4(at), base: base ? Buffer.from(base) : null, packBytes: packBytes ? int4(packBytes) : undefined };
}

export class RemoteObjects implements Holder, TreeSource {
  /** Decoded objects kept for the walk (tree objects) and as delta bases. */
  private readonly decoded = new Map<string, Buffer>();
  /** Stored frames read for the walk, by place: the transfer that follows needs them again. */
  private readonly frames = new Map<string, Buffer>();
  /** Index rows read so far: the walk reads the trees', the transfer everyone's. */
  private readonly located = new Map<string, RemoteLocator>();
  bytesReceived = 0;

  constructor(
    private readonly conn: RemoteConnection,
    /** The local Store: delta bases it holds are read there rather than fetched. */
    private readonly local?: Store,
    /** Keep the frames canonical() reads, for a transfer that stores them next (fetch). */
    private readonly keepFrames = false,
  ) {}

  async has(ids: Buffer[]): Promise<Set<string>> {
    const rows = await this.conn.query<{ id: Buffer }>('SELECT id FROM layerfs.objects WHERE id = ANY($1::bytea[])', [ids]);
    return new Set(rows.map((r) => keyOf(r.id)));
  }

  /**
   * The index rows of `ids` the remote holds (those looked up before are kept), with the size
   * of the pack row each points into, read through a binary COPY (ids and bases arrive as
   * bytes, with no hex text to produce and parse). With `frames`, the same query also brings
   * each distinct frame (by place, opened), one round trip for both: the walk's tree reads.
   */
  async locators(ids: Buffer[], frames?: Map<string, Buffer>): Promise<Map<string, RemoteLocator>> {
    const out = new Map<string, RemoteLocator>();
    const want: Buffer[] = [];
    for (const id of ids) {
      const hit = this.located.get(keyOf(id));
      if (hit && !(frames && !this.frames.has(placeKey(hit)))) out.set(keyOf(id), hit);
      else want.push(id);
    }
    // The frame once per place: members of one group frame share it.
    const frameCol = frames ? `, CASE WHEN row_number() OVER (PARTITION BY o.pack, o."offset") = 1 THEN substring(p.data FROM o."offset" + 1 FOR o.length) END` : '';
    for (let i = 0; i < want.length; i += LOCATE_BATCH) {
      const hex = want.slice(i, i + LOCATE_BATCH).map((id) => id.toString('hex')).join(',');
      const rows = parseBinaryCopy(
        await this.conn.copyOut(
          `COPY (SELECT o.id, o.kind::int4, o.size, o.codec::int4, o.pack, o."offset", o.length, o.at, o.base, octet_length(p.data)${frameCol} FROM layerfs.objects o JOIN layerfs.packs p ON p.id = o.pack WHERE o.id = ANY(ARRAY(SELECT decode(h, 'hex') FROM unnest(string_to_array('${hex}', ',')) AS h))) TO STDOUT (FORMAT binary)`,
        ),
        this.conn.name,
      );
      for (const row of rows) {
        const l = locatorOf(row);
        if (!l) continue;
        this.located.set(keyOf(l.id), l);
        out.set(keyOf(l.id), l);
        const data = row[10];
        if (frames && data && data.length === l.length) {
          this.bytesReceived += data.length;
          this.got(frames, l, this.open(data, l), this.keepFrames);
        }
      }
    }
    if (frames) for (const l of out.values()) if (!frames.has(placeKey(l)) && this.frames.has(placeKey(l))) frames.set(placeKey(l), this.frames.get(placeKey(l))!);
    return out;
  }

  /**
   * The stored bytes of each distinct frame the locators name, by place. Pack rows of which at
   * least half is wanted are read whole (a clone reads most rows in the order a push wrote
   * them); of the others only the frames, with substring() (the data is stored EXTERNAL, so
   * PostgreSQL reads just the TOAST chunks it needs). Bytes come through a binary COPY: as stored,
   * with no hex or base64 text to produce on the server and decode here (pg reads query results
   * as text only).
   */
  async frameBytes(locs: RemoteLocator[], keep = false): Promise<Map<string, Buffer>> {
    const out = new Map<string, Buffer>();
    const places = new Map<string, RemoteLocator>();
    for (const l of locs) {
      const key = placeKey(l);
      const kept = this.frames.get(key);
      if (kept) out.set(key, kept);
      else places.set(key, l);
    }
    const byPack = new Map<string, RemoteLocator[]>();
    for (const l of places.values()) {
      const list = byPack.get(l.pack);
      if (list) list.push(l);
      else byPack.set(l.pack, [l]);
    }
    const sizes = new Map<string, number>();
    for (const [pack, list] of byPack) if (list[0]!.packBytes !== undefined) sizes.set(pack, list[0]!.packBytes);
    const packIds = [...byPack.keys()].filter((id) => !sizes.has(id));
    for (let i = 0; i < packIds.length; i += LOCATE_BATCH) {
      const rows = await this.conn.query<{ id: string; n: number }>('SELECT id::text AS id, octet_length(data) AS n FROM layerfs.packs WHERE id = ANY($1::int8[])', [packIds.slice(i, i + LOCATE_BATCH)]);
      for (const r of rows) sizes.set(r.id, r.n);
    }
    const whole: string[] = [];
    const parts: RemoteLocator[] = [];
    for (const [pack, list] of byPack) {
      const wanted = list.reduce((n, l) => n + l.length, 0);
      if (wanted * 2 >= (sizes.get(pack) ?? Infinity)) whole.push(pack);
      else parts.push(...list);
    }
    for (let i = 0; i < whole.length; i += 16) {
      const rows = parseBinaryCopy(await this.conn.copyOut(`COPY (SELECT id, data FROM layerfs.packs WHERE id = ANY(${int8Array(whole.slice(i, i + 16))})) TO STDOUT (FORMAT binary)`), this.conn.name);
      for (const [id, data] of rows) {
        if (!data) continue;
        this.bytesReceived += data.length;
        for (const l of byPack.get(int8Text(id!)) ?? []) if (l.offset >= 0 && l.offset + l.length <= data.length) this.got(out, l, this.open(data.subarray(l.offset, l.offset + l.length), l), keep);
      }
    }
    for (let i = 0; i < parts.length; i += LOCATE_BATCH) {
      const part = parts.slice(i, i + LOCATE_BATCH);
      const rows = parseBinaryCopy(
        await this.conn.copyOut(
          `COPY (SELECT substring(p.data FROM (f.off + 1)::int4 FOR f.len::int4), f.ord::int4 FROM unnest(${int8Array(part.map((l) => l.pack))}, ${int8Array(part.map((l) => l.offset))}, ${int8Array(part.map((l) => l.length))}) WITH ORDINALITY AS f(pack, off, len, ord) JOIN layerfs.packs p ON p.id = f.pack) TO STDOUT (FORMAT binary)`,
        ),
        this.conn.name,
      );
      for (const [data, ord] of rows) {
        const l = part[int4(ord!) - 1];
        if (!l || !data || data.length !== l.length) continue;
        this.got(out, l, this.open(data, l), keep);
        this.bytesReceived += data.length;
      }
    }
    return out;
  }

  /**
   * Every pack row that index rows point into, in id order (the order pushes wrote them),
   * streamed with its index rows: one binary COPY and no ids sent, for a fetch that wants
   * everything (a clone into an empty Store). Each row's index rows come packed in one bytea
   * (INDEX_RECORD), in offset order, so the stream starts without a round trip for the index
   * and nothing is parsed per object but its record.
   */
  async *packRowsIndexed(): AsyncGenerator<[Buffer, Buffer]> {
    const record = `o.id || int2send(o.kind) || int4send(o.size) || int2send(o.codec) || int4send(o."offset") || int4send(o.length) || int4send(o.at) || int2send(coalesce(octet_length(o.base), 0)::int2) || coalesce(o.base, ''::bytea)`;
    const sql = `COPY (SELECT p.data, i.idx FROM layerfs.packs p JOIN (SELECT o.pack, string_agg(${record}, ''::bytea ORDER BY o."offset") AS idx FROM layerfs.objects o GROUP BY o.pack) i ON i.pack = p.id ORDER BY p.id) TO STDOUT (FORMAT binary)`;
    for await (const [data, idx] of this.conn.copyRows(sql)) {
      if (!data || !idx) continue;
      this.bytesReceived += data.length;
      yield [data, idx];
    }
  }

  /** The frame `l` names in its pack row's bytes, opened (empty when out of the row: it then fails its re-hash). */
  frameIn(packData: Buffer, l: Pick<RemoteLocator, 'id' | 'offset' | 'length'>): Buffer {
    if (l.offset < 0 || l.offset + l.length > packData.length) return Buffer.alloc(0);
    return this.open(packData.subarray(l.offset, l.offset + l.length), l);
  }

  /** A frame read: `keep` keeps it (by place) until forget(), so a read that names it again gets the same bytes. */
  private got(out: Map<string, Buffer>, l: RemoteLocator, data: Buffer, keep: boolean): void {
    out.set(placeKey(l), data);
    if (keep) this.frames.set(placeKey(l), data);
  }

  /** A frame as read from a pack: opened when the remote is encrypted. */
  private open(stored: Buffer, l: Pick<RemoteLocator, 'id'>): Buffer {
    return this.conn.cipher ? this.conn.cipher.open(stored, this.where(l.id)) : stored;
  }

  private where(id: Buffer): string {
    return `remote ${this.conn.name} (object ${toHex(id)})`;
  }

  /** Canonical, re-hashed bytes of `ids` (delta bases from the local Store where it has them). */
  async canonical(ids: Buffer[], depth = 0): Promise<Map<string, Buffer>> {
    const out = new Map<string, Buffer>();
    const want = ids.filter((id) => {
      const hit = this.decoded.get(keyOf(id));
      if (hit) out.set(keyOf(id), hit);
      return !hit;
    });
    if (want.length === 0) return out;
    if (depth > 32) throw new LayerFsError('ERR_CORRUPT', `remote ${this.conn.name}: delta chain too long`, { hint: 'the remote holds damaged or forged data' });
    const frames = new Map<string, Buffer>();
    const locs = await this.locators(want, frames);
    for (const id of want) if (!locs.has(keyOf(id))) throw new LayerFsError('ERR_CORRUPT', `object ${toHex(id)} is missing from the remote ${this.conn.name}`, { id: toHex(id), hint: 'the remote is incomplete; nothing of it was kept' });
    const bases = [...locs.values()].filter((l) => l.codec === Codec.Delta).flatMap((l) => baseIds(l.base));
    const baseBytes = new Map<string, Buffer>();
    const fromRemote: Buffer[] = [];
    for (const b of bases) {
      if (this.local?.objects.has(b)) baseBytes.set(keyOf(b), this.local.objects.get(b));
      else fromRemote.push(b);
    }
    if (fromRemote.length) for (const [k, v] of await this.canonical(fromRemote, depth + 1)) baseBytes.set(k, v);
    for (const id of want) {
      const l = locs.get(keyOf(id))!;
      const stored = frames.get(placeKey(l));
      if (!stored) throw new LayerFsError('ERR_CORRUPT', `object ${toHex(id)} has a damaged locator on the remote ${this.conn.name}`, { id: toHex(id) });
      const b = l.codec === Codec.Delta ? Buffer.concat(baseIds(l.base).map((x) => baseBytes.get(keyOf(x))!)) : undefined;
      const data = decodeForm(l, stored, b, this.where(id));
      this.decoded.set(keyOf(id), data);
      out.set(keyOf(id), data);
    }
    return out;
  }

  async trees(refs: ChildRef[]): Promise<Map<string, Buffer>> {
    const m = await this.canonical(refs.map((r) => r.id));
    for (const r of refs) {
      const l = m.get(keyOf(r.id));
      if (!l) throw new LayerFsError('ERR_CORRUPT', `object ${toHex(r.id)} is missing from the remote ${this.conn.name}`, { id: toHex(r.id) });
    }
    return m;
  }

  /** Forgets decoded bytes and frames once they are stored locally. */
  forget(ids: Buffer[], locs?: Map<string, RemoteLocator>): void {
    for (const id of ids) {
      this.decoded.delete(keyOf(id));
      const l = locs?.get(keyOf(id));
      if (l) this.frames.delete(placeKey(l));
    }
  }

  /** Runs `fn` in one transaction on the remote. */
  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.conn.transaction(fn);
  }

  /**
   * Writes one batch of frames: pack rows of about PACK_ROW_TARGET bytes and the index rows, in
   * one transaction, so a batch lands whole or not at all; `finish` runs last in the same
   * transaction (a push's head move after its last batch: one commit for both). Each pack row
   * and its index rows are one statement. Objects another pusher stored meanwhile are left as
   * they are.
   */
  async writeBatch(frames: Frame[], finish?: () => Promise<void>): Promise<{ bytes: number; objects: number }> {
    let bytes = 0;
    let objects = 0;
    await this.conn.transaction(async () => {
      let row: Frame[] = [];
      let rowBytes = 0;
      const flush = async () => {
        if (row.length === 0) return;
        const cipher = this.conn.cipher;
        const sealed = cipher ? row.map((f) => cipher.seal(f.data)) : row.map((f) => f.data);
        const data = Buffer.concat(sealed);
        const cols: unknown[][] = [[], [], [], [], [], [], [], []];
        let off = 0;
        row.forEach((f, i) => {
          const length = sealed[i]!.length;
          for (const m of f.members) {
            const vals = [m.id, m.kind, m.size, m.codec, off, length, m.at, m.base];
            vals.forEach((v, j) => cols[j]!.push(v));
            objects++;
          }
          off += length;
        });
        await this.conn.query(
          `WITH p AS (INSERT INTO layerfs.packs (data) VALUES ($9) RETURNING id)
           INSERT INTO layerfs.objects (id, kind, size, codec, pack, "offset", length, at, base)
           SELECT u.id, u.kind, u.size, u.codec, p.id, u.off, u.length, u.at, u.base
           FROM unnest($1::bytea[], $2::int2[], $3::int4[], $4::int2[], $5::int4[], $6::int4[], $7::int4[], $8::bytea[]) AS u(id, kind, size, codec, off, length, at, base), p
           ON CONFLICT (id) DO NOTHING`,
          [...cols, data],
        );
        bytes += data.length;
        row = [];
        rowBytes = 0;
      };
      for (const f of frames) {
        row.push(f);
        rowBytes += f.data.length;
        if (rowBytes >= PACK_ROW_TARGET) await flush();
      }
      await flush();
      await finish?.();
    });
    return { bytes, objects };
  }
}
