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
}

/** Stored bytes per remote pack row written by a push. */
const PACK_ROW_TARGET = 1024 * 1024;
/** Ids per locator query. */
const LOCATE_BATCH = 4096;

const placeKey = (l: RemoteLocator) => `${l.pack}:${l.offset}:${l.length}`;

export class RemoteObjects implements Holder, TreeSource {
  /** Decoded objects kept for the walk (tree objects) and as delta bases. */
  private readonly decoded = new Map<string, Buffer>();
  /** Stored frames read for the walk, by place: the transfer that follows needs them again. */
  private readonly frames = new Map<string, Buffer>();
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

  async locators(ids: Buffer[]): Promise<Map<string, RemoteLocator>> {
    const out = new Map<string, RemoteLocator>();
    for (let i = 0; i < ids.length; i += LOCATE_BATCH) {
      const rows = await this.conn.query<RemoteLocator>('SELECT id, kind, size, codec, pack::text AS pack, "offset", length, at, base FROM layerfs.objects WHERE id = ANY($1::bytea[])', [ids.slice(i, i + LOCATE_BATCH)]);
      for (const r of rows) out.set(keyOf(r.id), r);
    }
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
  async frameBytes(locs: RemoteLocator[]): Promise<Map<string, Buffer>> {
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
    const packIds = [...byPack.keys()];
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
        for (const l of byPack.get(int8Text(id!)) ?? []) if (l.offset >= 0 && l.offset + l.length <= data.length) out.set(placeKey(l), this.open(data.subarray(l.offset, l.offset + l.length), l));
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
        out.set(placeKey(l), this.open(data, l));
        this.bytesReceived += data.length;
      }
    }
    return out;
  }

  /** A frame as read from a pack: opened when the remote is encrypted. */
  private open(stored: Buffer, l: RemoteLocator): Buffer {
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
    const locs = await this.locators(want);
    for (const id of want) if (!locs.has(keyOf(id))) throw new LayerFsError('ERR_CORRUPT', `object ${toHex(id)} is missing from the remote ${this.conn.name}`, { id: toHex(id), hint: 'the remote is incomplete; nothing of it was kept' });
    const frames = await this.frameBytes([...locs.values()]);
    if (this.keepFrames) {
      for (const l of locs.values()) {
        const f = frames.get(placeKey(l));
        if (f) this.frames.set(placeKey(l), f);
      }
    }
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

  /**
   * Writes one batch of frames: pack rows of about PACK_ROW_TARGET bytes and the index rows, in
   * one transaction, so a batch lands whole or not at all. Objects another pusher stored
   * meanwhile are left as they are.
   */
  async writeBatch(frames: Frame[]): Promise<{ bytes: number; objects: number }> {
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
        const [p] = await this.conn.query<{ id: string }>('INSERT INTO layerfs.packs (data) VALUES ($1) RETURNING id::text AS id', [data]);
        const cols: unknown[][] = [[], [], [], [], [], [], [], [], []];
        let off = 0;
        row.forEach((f, i) => {
          const length = sealed[i]!.length;
          for (const m of f.members) {
            const vals = [m.id, m.kind, m.size, m.codec, p!.id, off, length, m.at, m.base];
            vals.forEach((v, j) => cols[j]!.push(v));
            objects++;
          }
          off += length;
        });
        await this.conn.query(
          `INSERT INTO layerfs.objects (id, kind, size, codec, pack, "offset", length, at, base)
           SELECT * FROM unnest($1::bytea[], $2::int2[], $3::int4[], $4::int2[], $5::int8[], $6::int4[], $7::int4[], $8::int4[], $9::bytea[]) ON CONFLICT (id) DO NOTHING`,
          cols,
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
    });
    return { bytes, objects };
  }
}
