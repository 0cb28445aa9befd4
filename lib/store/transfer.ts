/**
 * Objects as they travel between Stores and remotes: frames as stored (a zstd group frame, a
 * delta frame, a raw object's bytes) with the index rows of the objects they hold. A receiver
 * stores the frames as they came and re-reads every object through the authenticated read path
 * before its transaction commits, so nothing that fails its id is ever kept (docs/REMOTES.md).
 */
import { objectId } from '../native/hash.js';
import { zstdCompress, zstdDecompress } from '../native/zstd.js';
import { zstdDictDecompress } from '../native/zstd-dict.js';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { Codec, DELTA_MAX_BASES, KEEP_COMPRESSED } from './codec.js';
import type { Store } from './store.js';
import { DOMAIN_TAGS, ObjectKind, type Locator } from './objects.js';
import { decodeExtentNode } from './tree/extents.js';
import { ContentForm, decodeInode, InodeKind } from './tree/inode.js';
import { decodeNode, TreeKind } from './tree/pages.js';
import { decodeRoot } from './tree/root.js';

import { mapSqliteError } from './sqlite-errors.js';
import { resolveRow } from './dictionary-refs.js';
import type { Dictionary } from './dictionary.js';

/** An object's index row without its place: what a receiver needs to read it from a frame. */
export interface ObjectForm {
  id: Buffer;
  kind: number;
  size: number;
  codec: number;
  at: number;
  base: Buffer | null;
}

/** Stored bytes of one frame and the objects (all or some of those it holds) sent with it. */
export interface Frame {
  data: Buffer;
  members: ObjectForm[];
}

/** Level for objects sent whole (their delta base is on neither side). */
const WHOLE_LEVEL = 3;

/** A delta's base ids (its `base` column: 1 to DELTA_MAX_BASES ids of 32 bytes). */
export function baseIds(base: Buffer | null): Buffer[] {
  const out: Buffer[] = [];
  if (!base) return out;
  for (let i = 0; i + 32 <= base.length; i += 32) out.push(base.subarray(i, i + 32));
  return out;
}

/** An object as a frame of its own, for when its stored frame cannot travel (a delta without its base). */
export function wholeFrame(id: Buffer, kind: number, data: Buffer): Frame {
  const z = zstdCompress(data, WHOLE_LEVEL);
  if (z.length <= data.length * KEEP_COMPRESSED) return { data: z, members: [{ id, kind, size: data.length, codec: Codec.Zstd, at: 0, base: null }] };
  return { data, members: [{ id, kind, size: data.length, codec: Codec.Raw, at: 0, base: null }] };
}

/**
 * The canonical bytes of `form` from its frame's stored bytes (and, for a delta, its bases'
 * bytes, concatenated), re-hashed against its id: a mismatch is ERR_CORRUPT naming `where`.
 */
export function decodeForm(form: ObjectForm, stored: Buffer, bases: Buffer | undefined, where: string): Buffer {
  const bad = (why: string, cause?: unknown) => new LayerFsError('ERR_CORRUPT', `object ${toHex(form.id)} from ${where} is damaged (${why})`, { id: toHex(form.id), hint: 'the data there is damaged or forged; nothing of it was stored or sent', cause });
  const tag = DOMAIN_TAGS[form.kind as ObjectKind];
  if (tag === undefined) throw bad(`unknown kind ${form.kind}`);
  let data: Buffer;
  try {
    if (form.codec === Codec.Raw) data = stored;
    else if (form.codec === Codec.Zstd) data = zstdDecompress(stored, -1).subarray(form.at, form.at + form.size);
    else if (form.codec === Codec.Delta) {
      if (!bases || !form.base || form.base.length % 32 !== 0 || form.base.length > 32 * DELTA_MAX_BASES) throw bad('delta base');
      data = zstdDecompress(stored, form.size, bases);
    } else throw bad(`unknown codec ${form.codec}`);
  } catch (e) {
    if (e instanceof LayerFsError && e.code === 'ERR_CORRUPT') throw e;
    throw bad('frame does not decode', e);
  }
  if (data.length !== form.size || !objectId(tag, data).equals(form.id)) throw bad('does not match its id');
  return data;
}

/** Reads objects of a Store as frames (as stored) for sending. */
export class FrameSource {
  private readonly locate;
  private readonly part;

  /** Locators looked up once: a push asks for each several times (sizes, bases, frames). */
  private readonly known = new Map<string, Locator>();

  constructor(private readonly store: Store) {
    this.locate = store.db.prepare('SELECT kind, size, codec, pack, offset, length, at, base FROM objects WHERE id = ?');
    this.part = store.db.prepare('SELECT substr(data, ?, ?) FROM packs WHERE id = ?').pluck();
  }

  locator(id: Buffer): Locator | undefined {
    const key = id.toString('latin1');
    let loc = this.known.get(key);
    if (!loc) {
      loc = this.locate.get(id) as Locator | undefined;
      if (loc) this.known.set(key, resolveRow(this.store.db, loc));
    }
    return loc;
  }

  /**
   * The frames holding `ids` (each frame once, with those of `ids` it holds). `whole(id)` says
   * which objects must travel decoded instead (a delta whose bases the receiver will not have).
   */
  frames(ids: Buffer[], whole: (id: Buffer, loc: Locator) => boolean): Frame[] {
    const byPlace = new Map<string, Frame>();
    const out: Frame[] = [];
    try {
      for (const id of ids) {
        // Not the cached locator: a repack may have moved the object since it was looked up.
        const row = this.locate.get(id) as Locator | undefined;
        // What travels names a dictionary by its id, never by this Store's ref (dictionary-refs.ts).
        const loc = row && resolveRow(this.store.db, row);
        if (!loc) throw new LayerFsError('ERR_CORRUPT', `object ${toHex(id)} is missing from the Store`, { id: toHex(id), path: this.store.path, hint: 'run layerfs verify' });
        // A dictionary frame needs its dictionary as a delta needs its bases.
        if ((loc.codec === Codec.Delta || loc.codec === Codec.Dict) && whole(id, loc)) {
          out.push(wholeFrame(id, loc.kind, this.store.objects.get(id)));
          continue;
        }
        const key = `${loc.pack}:${loc.offset}:${loc.length}`;
        let f = byPlace.get(key);
        if (!f) {
          const data = this.part.get(loc.offset + 1, loc.length, loc.pack) as Buffer | null;
          if (!data || data.length !== loc.length) throw new LayerFsError('ERR_CORRUPT', `object ${toHex(id)} has a damaged locator`, { id: toHex(id), path: this.store.path, hint: 'run layerfs verify' });
          f = { data, members: [] };
          byPlace.set(key, f);
          out.push(f);
        }
        f.members.push({ id, kind: loc.kind, size: loc.size, codec: loc.codec, at: loc.at, base: loc.base });
      }
      // What leaves is checked like what arrives: a damaged Store must not seed a remote with
      // objects every other Store would then refuse (and no push would ever resend).
      for (const f of out) checkFrame(f.data, f.members, (b) => this.store.objects.get(b), undefined, this.store.path);
    } catch (e) {
      throw mapSqliteError(e, this.store.path);
    }
    return out;
  }
}

/**
 * Decodes the members of one frame from its stored bytes (a group frame once for all) and
 * re-hashes each against its id, its kind checked where `expectedKind` knows it; `baseOf` gives
 * a delta's base bytes. Returns each member with its canonical bytes; damage is ERR_CORRUPT.
 */
export function checkFrame(stored: Buffer, members: ObjectForm[], baseOf: (id: Buffer) => Buffer, expectedKind?: (id: Buffer) => number | undefined, where = 'the remote'): [ObjectForm, Buffer][] {
  let plain: Buffer | undefined;
  return members.map((m) => {
    const kind = expectedKind?.(m.id);
    if (kind !== undefined && kind !== m.kind) throw new LayerFsError('ERR_CORRUPT', `object ${toHex(m.id)} was sent as kind ${m.kind}, expected ${kind}`, { id: toHex(m.id), hint: 'the remote holds damaged or forged data; nothing of it was kept' });
    if (m.codec === Codec.Zstd || m.codec === Codec.Dict) {
      plain ??= decodeFrame(m, stored, where, m.codec === Codec.Dict ? dictionaryOf(m, baseOf, where) : undefined);
      return [m, decodeForm({ ...m, codec: Codec.Raw }, plain.subarray(m.at, m.at + m.size), undefined, where)];
    }
    const bases = m.codec === Codec.Delta && m.base && m.base.length > 0 && m.base.length % 32 === 0 ? Buffer.concat(baseIds(m.base).map(baseOf)) : undefined;
    return [m, decodeForm(m, stored, bases, where)];
  });
}

/** The dictionary a codec-3 member names (one id in `base`), read with `baseOf`. */
function dictionaryOf(m: ObjectForm, baseOf: (id: Buffer) => Buffer, where: string): Dictionary {
  if (!m.base || m.base.length !== 32) throw new LayerFsError('ERR_CORRUPT', `object ${toHex(m.id)} from ${where} is damaged (dictionary)`, { id: toHex(m.id), hint: 'the data there is damaged or forged; nothing of it was stored or sent' });
  return { id: m.base, bytes: baseOf(m.base) };
}

/** A zstd group frame (with its dictionary, if any), decoded once for all its members (damage is ERR_CORRUPT naming one). */
function decodeFrame(m: ObjectForm, stored: Buffer, where: string, dict?: Dictionary): Buffer {
  try {
    return dict ? zstdDictDecompress(stored, -1, dict) : zstdDecompress(stored, -1);
  } catch (e) {
    throw new LayerFsError('ERR_CORRUPT', `object ${toHex(m.id)} from ${where} is damaged (frame does not decode)`, { id: toHex(m.id), hint: 'the data there is damaged or forged; nothing of it was stored or sent', cause: e });
  }
}

/** An object a tree object refers to, with the kind it must have. */
export interface ChildRef {
  id: Buffer;
  kind: ObjectKind;
}

/**
 * The objects a tree object (root, page, extent node) refers to directly; [] for content. A
 * transfer walks states with it, skipping every subtree whose top the receiver already holds.
 */
export function childrenOf(kind: ObjectKind, data: Buffer, id: Buffer): ChildRef[] {
  const what = `object ${toHex(id)}`;
  if (kind === ObjectKind.Root) return [{ id: decodeRoot(data, what).inodes, kind: ObjectKind.Page }];
  if (kind === ObjectKind.Extents) {
    const node = decodeExtentNode(data, what);
    return node.ids.map((c) => ({ id: c, kind: node.level === 0 ? ObjectKind.Chunk : ObjectKind.Extents }));
  }
  if (kind !== ObjectKind.Page) return [];
  const tree = data[0] as TreeKind;
  const node = decodeNode(tree, data, what);
  if (node.level > 0) return node.vals.map((c) => ({ id: c, kind: ObjectKind.Page }));
  if (tree !== TreeKind.Inodes) return [];
  const out: ChildRef[] = [];
  node.keys.forEach((k, i) => {
    const inode = decodeInode(node.vals[i]!, Number(k.readBigUInt64BE(0)));
    if (inode.form === ContentForm.None || !inode.content) return;
    if (inode.kind === InodeKind.Dir) out.push({ id: inode.content, kind: ObjectKind.Page });
    else if (inode.form === ContentForm.Whole) out.push({ id: inode.content, kind: ObjectKind.Blob });
    else out.push({ id: inode.content, kind: ObjectKind.Extents });
  });
  return out;
}
