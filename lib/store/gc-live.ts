/**
 * gc's live set and the walk that fills it. The set lives in temporary tables of the gc's own
 * connection, in a temporary file rather than in memory (temp_store = FILE), so gc's memory does
 * not grow with the Store: a Store of 10 million objects would need ~1.5 GB as a JS Set.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { StoreAccess } from './access.js';
import { Codec } from './codec.js';
import { hasTable as hasDictionaryRefs, resolveBase } from './dictionary-refs.js';
import { ObjectKind } from './objects.js';
import { decodeExtentNode } from './tree/extents.js';
import { ContentForm, decodeInode, InodeKind } from './tree/inode.js';
import { decodeNode, TreeKind } from './tree/pages.js';
import { decodeRoot } from './tree/root.js';

/** A state gc keeps, and the root it walks from. */
export interface GcRoot {
  kind: string;
  id: string;
  rootId: Buffer;
}

/** Highest tier a garbage object is given (tierGarbage): above any chain a valid Store holds. */
const MAX_TIER = 64;

/** Cache of the temporary database, in KiB: bounds what the live set keeps in memory. */
const TEMP_CACHE_KIB = 16 * 1024;

/**
 * `gc_live`: every object found live (`walked` = 1 for tree objects whose whole subtree is in
 * it; an object kept only as a delta base is not walked). `gc_garbage`: what mark found
 * unreachable, by `tier` and then in id order: the sweep deletes tier by tier, each in the
 * index's order, so each of its transactions rewrites a run of neighbouring index pages and
 * the whole sweep about the index once (random order rewrote most index pages in every batch).
 * An object's tier is above that of every garbage object stored against it (a delta's bases, a
 * dictionary frame's dictionary: tierGarbage), so no object is deleted while one that needs it
 * remains: a writer that finds a garbage object stored between two sweep transactions and
 * publishes it (which keeps it) never keeps an object whose base is gone.
 */
export class LiveSet {
  private readonly hasQ;
  private readonly walkedQ;
  private readonly addQ;
  private readonly setWalkedQ;

  constructor(private readonly store: StoreAccess) {
    const db = store.db;
    // Changing temp_store drops temporary tables, so it comes first.
    db.pragma('temp_store = FILE');
    db.pragma(`temp.cache_size = -${TEMP_CACHE_KIB}`);
    db.exec(`
DROP TABLE IF EXISTS temp.gc_live;
DROP TABLE IF EXISTS temp.gc_garbage;
CREATE TEMP TABLE gc_live (id BLOB PRIMARY KEY, walked INTEGER NOT NULL) WITHOUT ROWID;
CREATE TEMP TABLE gc_garbage (id BLOB PRIMARY KEY, pack INTEGER NOT NULL, size INTEGER NOT NULL, tier INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
`);
    this.hasQ = db.prepare('SELECT 1 FROM temp.gc_live WHERE id = ?').pluck();
    this.walkedQ = db.prepare('SELECT walked FROM temp.gc_live WHERE id = ?').pluck();
    this.addQ = db.prepare('INSERT OR IGNORE INTO temp.gc_live (id, walked) VALUES (?, 0)');
    this.setWalkedQ = db.prepare('INSERT INTO temp.gc_live (id, walked) VALUES (?, 1) ON CONFLICT (id) DO UPDATE SET walked = 1');
  }

  has(id: Buffer): boolean {
    return this.hasQ.get(id) !== undefined;
  }

  /** Adds `id`; whether it was new. */
  add(id: Buffer): boolean {
    return this.addQ.run(id).changes === 1;
  }

  walked(id: Buffer): boolean {
    return this.walkedQ.get(id) === 1;
  }

  setWalked(id: Buffer): void {
    this.setWalkedQ.run(id);
  }

  /**
   * Adds the delta bases of every live object, and theirs, until nothing changes: deltas are
   * copied once into a table of their own, then joined with the live set (a chain is at most 16
   * links, so as many rounds).
   */
  addDeltaBases(): void {
    const db = this.store.db;
    db.exec('DROP TABLE IF EXISTS temp.gc_delta; CREATE TEMP TABLE gc_delta (id BLOB PRIMARY KEY, base BLOB NOT NULL) WITHOUT ROWID');
    // A dictionary frame's row names its dictionary by a ref (format 12, dictionary-refs.ts): the dictionary's id is what lives.
    const base = hasDictionaryRefs(db)
      ? `CASE WHEN o.codec = ${Codec.Dict} AND length(o.base) <> 32 THEN coalesce((SELECT d.id FROM main.dictionaries d WHERE d.ref = o.base), o.base) ELSE o.base END`
      : 'o.base';
    db.exec(`INSERT INTO temp.gc_delta (id, base) SELECT o.id, ${base} FROM main.objects o WHERE o.base IS NOT NULL`);
    const steps = [0, 1, 2, 3].map((k) =>
      db.prepare(
        `INSERT OR IGNORE INTO temp.gc_live (id, walked) SELECT substr(d.base, ${k * 32 + 1}, 32), 0 FROM temp.gc_delta d WHERE length(d.base) >= ${(k + 1) * 32} AND d.id IN (SELECT id FROM temp.gc_live)`,
      ),
    );
    for (let added = 1; added > 0; ) added = steps.reduce((n, s) => n + s.run().changes, 0);
    // Kept for tierGarbage, once the garbage is known.
  }

  /**
   * Sets each garbage object's tier (gc_garbage, filled) one above the highest tier of the
   * garbage objects stored against it, starting from 0, from the bases addDeltaBases copied:
   * round by round, only the bases of the objects raised in the round before are looked at.
   * A delta chain is at most DELTA_MAX_DEPTH links and a dictionary adds one; a Store whose
   * bases loop (forged) stops rising at MAX_TIER. Returns the highest tier; above 0, the sweep's
   * order (tier, id) is indexed.
   */
  tierGarbage(): number {
    const db = this.store.db;
    db.exec(`
DROP TABLE IF EXISTS temp.gc_front; DROP TABLE IF EXISTS temp.gc_next;
CREATE TEMP TABLE gc_front (id BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TEMP TABLE gc_next (id BLOB PRIMARY KEY) WITHOUT ROWID;
INSERT INTO temp.gc_front (id) SELECT d.id FROM temp.gc_delta d WHERE d.id IN (SELECT id FROM temp.gc_garbage);
`);
    const bases = [0, 1, 2, 3].map((k) => `SELECT substr(d.base, ${k * 32 + 1}, 32) AS b FROM temp.gc_front f JOIN temp.gc_delta d ON d.id = f.id WHERE length(d.base) >= ${(k + 1) * 32}`).join(' UNION ');
    const next = db.prepare(`INSERT INTO temp.gc_next (id) SELECT b FROM (${bases}) WHERE b IN (SELECT id FROM temp.gc_garbage)`);
    const raise = db.prepare('UPDATE temp.gc_garbage SET tier = ? WHERE id IN (SELECT id FROM temp.gc_next)');
    let tier = 0;
    while (tier < MAX_TIER && next.run().changes > 0) {
      raise.run(++tier);
      db.exec('DELETE FROM temp.gc_front; INSERT INTO temp.gc_front SELECT id FROM temp.gc_next; DELETE FROM temp.gc_next');
    }
    db.exec('DROP TABLE temp.gc_delta; DROP TABLE temp.gc_front; DROP TABLE temp.gc_next');
    if (tier > 0) db.exec('CREATE INDEX temp.gc_garbage_order ON gc_garbage (tier, id)');
    return tier;
  }

  close(): void {
    const db = this.store.db;
    if (!db.open) return;
    db.exec('DROP TABLE IF EXISTS temp.gc_live; DROP TABLE IF EXISTS temp.gc_garbage; DROP TABLE IF EXISTS temp.gc_delta; DROP TABLE IF EXISTS temp.gc_front; DROP TABLE IF EXISTS temp.gc_next');
    db.pragma('temp_store = MEMORY');
  }
}

function splitBases(base: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o + 32 <= base.length; o += 32) out.push(Buffer.from(base.subarray(o, o + 32)));
  return out;
}

/** Walks kept states into the live set, each subtree once. */
export class Marker {
  /** Objects marked since the last takeFresh(), when tracking: their delta bases are still to be marked. */
  private fresh: Buffer[] = [];
  tracking = false;

  constructor(
    private readonly store: StoreAccess,
    readonly live: LiveSet,
  ) {}

  walkedRoot(id: Buffer): boolean {
    return this.live.walked(id);
  }

  mark(id: Buffer): boolean {
    if (!this.live.add(id)) return false;
    if (this.tracking) this.fresh.push(id);
    return true;
  }

  /** Marks the delta bases of everything marked since tracking began (bases of bases too). */
  markFreshBases(): void {
    const baseOf = this.store.db.prepare('SELECT codec, base FROM objects WHERE id = ?');
    while (this.fresh.length > 0) {
      const row = baseOf.get(this.fresh.pop()!) as { codec: number; base: Buffer | null } | undefined;
      const base = row && resolveBase(this.store.db, row.codec, row.base);
      if (base) for (const b of splitBases(base)) this.mark(b);
    }
  }

  /**
   * The Store's current dictionary is live while the meta row names it, used by a frame or not:
   * a large import trains it for the transactions after it, which would find it gone.
   */
  currentDictionary(): void {
    const hex = this.store.db.prepare("SELECT value FROM meta WHERE key = 'dictionary'").pluck().get() as string | undefined;
    if (hex) this.mark(Buffer.from(hex, 'hex'));
  }

  state(s: GcRoot): void {
    this.tree(s.rootId, ObjectKind.Root, (data) => this.page(TreeKind.Inodes, decodeRoot(data, `root ${toHex(s.rootId)}`).inodes), `${s.kind} ${s.id}`);
  }

  private tree(id: Buffer, kind: ObjectKind, visit: (data: Buffer) => void, what?: string): void {
    if (this.live.walked(id)) return;
    let data: Buffer;
    try {
      data = this.store.objects.get(id, kind);
    } catch (e) {
      if (!(e instanceof LayerFsError)) throw e;
      // Unreadable means unknown reach: deleting anything could lose what it names.
      throw new LayerFsError('ERR_CORRUPT', `gc cannot read ${what ?? `object ${toHex(id)}`} (${e.message}); nothing was deleted by this step`, {
        id: toHex(id),
        path: this.store.path,
        hint: 'run layerfs verify',
      });
    }
    visit(data);
    if (this.tracking && !this.live.has(id)) this.fresh.push(id);
    this.live.setWalked(id);
  }

  private page(kind: TreeKind, id: Buffer): void {
    this.tree(id, ObjectKind.Page, (data) => {
      const node = decodeNode(kind, data, `page ${toHex(id)}`);
      if (node.level > 0) {
        for (const c of node.vals) this.page(kind, c);
        return;
      }
      if (kind === TreeKind.Directory) return;
      node.keys.forEach((k, i) => {
        const inode = decodeInode(node.vals[i]!, Number(k.readBigUInt64BE(0)));
        if (inode.form === ContentForm.None) return;
        if (inode.kind === InodeKind.Dir) this.page(TreeKind.Directory, inode.content!);
        else if (inode.form === ContentForm.Whole) this.mark(inode.content!);
        else this.extents(inode.content!);
      });
    });
  }

  private extents(id: Buffer): void {
    this.tree(id, ObjectKind.Extents, (data) => {
      const node = decodeExtentNode(data, `extent node ${toHex(id)}`);
      for (const c of node.ids) {
        if (node.level === 0) this.mark(c);
        else this.extents(c);
      }
    });
  }
}
