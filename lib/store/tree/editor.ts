/**
 * Edits a state incrementally: changed inode records, name changes per directory, deleted
 * serials. `finish()` rewrites only the touched directory trees and inode-table paths, so a
 * new state costs what changed, not the size of the tree.
 */
import { DELTA_MAX_BASES } from '../codec.js';
import { ObjectKind, type ObjectWriter } from '../objects.js';
import type { PageStore } from '../page-io.js';
import { replacedChunks } from './extents.js';
import { ContentForm, decodeInode, encodeInode, encodeSerial, InodeKind, serialKey, type Inode } from './inode.js';
import { TreeKind, updateTree, type Mutation, type Mutations } from './pages.js';
import { SerialMap } from '../serial-tables.js';
import { encodeRoot } from './root.js';
import type { FsView } from './view.js';

/** Bytes of one block of encoded records (a record longer than this gets a block of its own). */
const RECORD_BLOCK = 1024 * 1024;

/**
 * Encoded inode records back to back in large blocks, addressed by a number: a changed file's
 * record costs its encoded bytes (tens of bytes), not a decoded Inode with its buffers and
 * arrays (about half a KiB of heap), however many files a commit changes.
 */
class RecordBlocks {
  private readonly blocks: Buffer[] = [];
  private used = RECORD_BLOCK;
  private count = 0;
  /** Per record, in typed arrays (doubled as they fill): its block, offset and length. */
  private block = new Uint32Array(1024);
  private offset = new Uint32Array(1024);
  private length = new Uint32Array(1024);

  /** Stores `rec` and returns its number. */
  add(rec: Buffer): number {
    if (this.used + rec.length > RECORD_BLOCK) {
      this.blocks.push(Buffer.allocUnsafeSlow(Math.max(RECORD_BLOCK, rec.length)));
      this.used = 0;
    }
    if (this.count === this.length.length) this.grow();
    rec.copy(this.blocks[this.blocks.length - 1]!, this.used);
    const n = this.count++;
    this.block[n] = this.blocks.length - 1;
    this.offset[n] = this.used;
    this.length[n] = rec.length;
    this.used += rec.length;
    return n;
  }

  get(n: number): Buffer {
    const off = this.offset[n]!;
    return this.blocks[this.block[n]!]!.subarray(off, off + this.length[n]!);
  }

  private grow(): void {
    const more = (a: Uint32Array) => {
      const b = new Uint32Array(a.length * 2);
      b.set(a);
      return b;
    };
    this.block = more(this.block);
    this.offset = more(this.offset);
    this.length = more(this.length);
  }
}

/** In `records`: the serial is deleted. */
const DELETED = -1;
/** In `records`: the serial's decoded record is in `dirs`. */
const DECODED = -2;

export class NamespaceEditor {
  /**
   * Changed records by serial: any kind but a directory encoded (its RecordBlocks number), a
   * directory DECODED (in `dirs`: finish() edits its entries), or DELETED. A serial-keyed table,
   * not a Map: a whole-tree commit changes ~97,000 records, and a Map of them held 7 MiB of the
   * mount daemon's heap at its peak, the end of the commit.
   */
  private readonly records = new SerialMap();
  private readonly dirs = new Map<number, Inode>();
  private readonly encoded = new RecordBlocks();
  /**
   * Name changes per directory: the name as a latin1 key (its bytes, one per character) → serial,
   * null to remove. Not a Buffer per name: a whole-tree change names ~85,000 entries, and their
   * Buffers cost ~20 MiB of a mount daemon's heap until the commit ends; finish() makes them one
   * directory at a time.
   */
  private readonly names = new Map<number, Map<string, number | null>>();

  constructor(
    private readonly base: FsView | null,
    private readonly pages: PageStore,
    private readonly w: ObjectWriter,
  ) {}

  /**
   * `hinted`: the caller already offered delta bases for the new content (a FUSE commit offers
   * each re-chunked piece its predecessor as it writes it), so the old tree is not walked again.
   */
  setInode(serial: number, inode: Inode, hinted = false): void {
    if (inode.kind === InodeKind.Dir) {
      this.dirs.set(serial, inode);
      this.records.set(serial, DECODED);
    } else {
      this.dirs.delete(serial);
      this.records.set(serial, this.encoded.add(encodeInode(normalize(inode))));
    }
    if (!hinted && inode.kind === InodeKind.File && inode.form !== ContentForm.None && this.base) this.suggestDelta(serial, inode);
  }

  /**
   * A changed file is likely a small edit of its previous version: a small file's old content is
   * offered as the delta base of its new content; in a large file, each new chunk is offered
   * the old chunk that covered the same offset.
   */
  private suggestDelta(serial: number, inode: Inode): void {
    let old: Inode | undefined;
    try {
      // Not inode(): a new serial is no error, and a commit of many new files made and caught one each.
      old = this.base!.storedInode(serial);
    } catch {
      return; // a damaged old record: no hint
    }
    if (!old || old.kind !== InodeKind.File || old.form !== inode.form || old.content!.equals(inode.content!)) return;
    if (inode.form === ContentForm.Whole) {
      this.w.suggestBase(inode.content!, old.content!);
      return;
    }
    try {
      for (const c of replacedChunks(old.content!, inode.content!, (id) => this.w.read(id), DELTA_MAX_BASES)) this.w.suggestBase(c.id, c.bases);
    } catch {
      // Only a hint: an unreadable old tree means no delta, never a failed commit.
    }
  }

  deleteInode(serial: number): void {
    this.dirs.delete(serial);
    this.records.set(serial, DELETED);
  }

  /** Binds `name` in directory `dir` to `serial`, or removes it when serial is null. */
  setName(dir: number, name: Buffer, serial: number | null): void {
    this.setNameKey(dir, name.toString('latin1'), serial);
  }

  /** setName with the name as a latin1 key (a caller that keeps names so shares its strings). */
  setNameKey(dir: number, key: string, serial: number | null): void {
    let m = this.names.get(dir);
    if (!m) this.names.set(dir, (m = new Map()));
    m.set(key, serial);
  }

  get changed(): boolean {
    return this.records.size > 0 || this.names.size > 0;
  }

  /**
   * Writes directory `dir`'s name changes now rather than at finish(), so a caller that gives
   * them one directory at a time holds one directory's, not every changed name of a whole-tree
   * commit until its end (the mount daemon's peak). The directory's record,
   * if it changed, must be set before: a later setInode of it would replace what this wrote.
   */
  writeNames(dir: number): void {
    const m = this.names.get(dir);
    if (!m) return;
    this.names.delete(dir);
    const rec = this.decodedDir(dir);
    if (rec === null) return;
    // latin1 keys compare as their bytes do: one character per byte, code units 0–255.
    const muts: Mutation[] = [...m]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, serial]) => ({ key: Buffer.from(k, 'latin1'), value: serial === null ? null : encodeSerial(serial) }));
    const root = updateTree(TreeKind.Directory, this.pages, rec.form === ContentForm.None ? null : rec.content, muts);
    rec.form = root ? ContentForm.Whole : ContentForm.None;
    rec.content = root;
  }

  /**
   * Writes the touched pages and the new root object; returns the root id. `onStep` runs after
   * each directory written and before the inode table (a long commit's progress; it may throw
   * to abort, and the caller's transaction then rolls back).
   */
  finish(onStep?: () => void): Buffer {
    for (const dir of [...this.names.keys()]) {
      onStep?.();
      this.writeNames(dir);
    }
    onStep?.();
    // Serials in order, each mutation made when the tree update reaches it (Mutations).
    const serials = Float64Array.from(this.records).sort();
    const muts: Mutations = {
      length: serials.length,
      key: (i) => serialKey(serials[i]!),
      value: (i) => {
        const at = this.records.get(serials[i]!)!;
        return at === DELETED ? null : at === DECODED ? encodeInode(normalize(this.dirs.get(serials[i]!)!)) : this.encoded.get(at);
      },
    };
    const table = updateTree(TreeKind.Inodes, this.pages, this.base ? this.base.inodesRoot : null, muts);
    return this.w.add(ObjectKind.Root, encodeRoot({ inodes: table! }));
  }

  /** Directory `dir`'s record, decoded to have its entries edited (kept in `dirs`), or null when it is deleted. */
  private decodedDir(dir: number): Inode | null {
    const at = this.records.get(dir);
    if (at === DELETED) return null;
    if (at === DECODED) return this.dirs.get(dir)!;
    const rec = at === undefined ? { ...this.base!.inode(dir) } : decodeInode(this.encoded.get(at), dir);
    this.dirs.set(dir, rec);
    this.records.set(dir, DECODED);
    return rec;
  }
}

function normalize(n: Inode): Inode {
  if (n.kind !== InodeKind.Dir) n.nlink = Math.max(1, n.parents?.length ?? 1);
  return n;
}
