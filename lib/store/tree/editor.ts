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
  /** Per record: its block, offset and length. */
  private readonly block: number[] = [];
  private readonly offset: number[] = [];
  private readonly length: number[] = [];

  /** Stores `rec` and returns its number. */
  add(rec: Buffer): number {
    if (this.used + rec.length > RECORD_BLOCK) {
      this.blocks.push(Buffer.allocUnsafeSlow(Math.max(RECORD_BLOCK, rec.length)));
      this.used = 0;
    }
    rec.copy(this.blocks[this.blocks.length - 1]!, this.used);
    this.block.push(this.blocks.length - 1);
    this.offset.push(this.used);
    this.length.push(rec.length);
    this.used += rec.length;
    return this.length.length - 1;
  }

  get(n: number): Buffer {
    const off = this.offset[n]!;
    return this.blocks[this.block[n]!]!.subarray(off, off + this.length[n]!);
  }
}

export class NamespaceEditor {
  /** Changed records: a directory's decoded (finish() edits its entries), any other kind encoded (its RecordBlocks number), null if deleted. */
  private readonly records = new Map<number, Inode | number | null>();
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
    const rec = inode.kind === InodeKind.Dir ? inode : this.encoded.add(encodeInode(normalize(inode)));
    this.records.set(serial, rec);
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
    this.records.set(serial, null);
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
   * Writes the touched pages and the new root object; returns the root id. `onStep` runs after
   * each directory written and before the inode table (a long commit's progress; it may throw
   * to abort, and the caller's transaction then rolls back).
   */
  finish(onStep?: () => void): Buffer {
    for (const [dir, m] of this.names) {
      onStep?.();
      let rec = this.records.get(dir);
      if (rec === null) continue;
      if (typeof rec === 'number') {
        rec = decodeInode(this.encoded.get(rec), dir);
        this.records.set(dir, rec);
      }
      if (rec === undefined) {
        rec = { ...this.base!.inode(dir) };
        this.records.set(dir, rec);
      }
      // latin1 keys compare as their bytes do: one character per byte, code units 0–255.
      const muts: Mutation[] = [...m]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, serial]) => ({ key: Buffer.from(k, 'latin1'), value: serial === null ? null : encodeSerial(serial) }));
      const root = updateTree(TreeKind.Directory, this.pages, rec.form === ContentForm.None ? null : rec.content, muts);
      rec.form = root ? ContentForm.Whole : ContentForm.None;
      rec.content = root;
    }
    onStep?.();
    // Serials in order, each mutation made when the tree update reaches it (Mutations).
    const serials = Float64Array.from(this.records.keys()).sort();
    const muts: Mutations = {
      length: serials.length,
      key: (i) => serialKey(serials[i]!),
      value: (i) => {
        const rec = this.records.get(serials[i]!) ?? null;
        return rec === null ? null : typeof rec === 'number' ? this.encoded.get(rec) : encodeInode(normalize(rec));
      },
    };
    const table = updateTree(TreeKind.Inodes, this.pages, this.base ? this.base.inodesRoot : null, muts);
    return this.w.add(ObjectKind.Root, encodeRoot({ inodes: table! }));
  }
}

function normalize(n: Inode): Inode {
  if (n.kind !== InodeKind.Dir) n.nlink = Math.max(1, n.parents?.length ?? 1);
  return n;
}
