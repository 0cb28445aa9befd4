/**
 * The namespace of an import, built while entries arrive in walk order, so memory per entry is a
 * few dozen bytes rather than objects: a directory's entries arrive together and in name order,
 * so its name tree is written as soon as the next directory's entries begin; an inode record is
 * encoded into one byte arena as soon as it is final. The result is byte for byte what
 * buildNamespace gives for the same tree (test/store/import-memory.test.ts compares them).
 */
import { ObjectKind, type ObjectWriter } from '../objects.js';
import type { PageStore } from '../page-io.js';
import { ContentForm, encodeInode, encodeSerial, serialKey, type Inode } from '../tree/inode.js';
import { TreeBuilder, TreeKind } from '../tree/pages.js';
import { encodeRoot } from '../tree/root.js';

export class NamespaceBuilder {
  private arena = Buffer.allocUnsafe(1 << 20);
  private used = 0;
  /** Record of serial s: arena[start[s] .. start[s] + length[s]). */
  private start = new Uint32Array(1024);
  private length = new Uint32Array(1024);
  private maxSerial = 0;
  /** Records that can still change: directories until their names are written, and files with more than one name. */
  private readonly open = new Map<number, Inode>();
  private dir: { serial: number; tree: TreeBuilder } | null = null;

  constructor(
    private readonly w: ObjectWriter,
    private readonly pages: PageStore,
  ) {}

  /** A record that is complete now; `parents` must be set (one entry per name, the root none). */
  setFinal(serial: number, inode: Inode): void {
    this.store(serial, encodeInode(inode));
  }

  /** A record completed later: a directory, or a file that may have more names (parents grow). */
  setOpen(serial: number, inode: Inode): void {
    this.open.set(serial, inode);
    if (serial > this.maxSerial) this.maxSerial = serial;
  }

  /** Another name of an open record. */
  addParent(serial: number, parent: number): void {
    this.open.get(serial)!.parents!.push(parent);
  }

  /** Names of one directory arrive together and in byte order; any other directory's ended. */
  addName(dir: number, name: Buffer, serial: number): void {
    if (this.dir?.serial !== dir) {
      this.closeDir();
      this.dir = { serial: dir, tree: new TreeBuilder(TreeKind.Directory, this.pages) };
    }
    this.dir.tree.pushEntry(name, encodeSerial(serial));
  }

  /** Writes the directory trees left, every open record, the inode table and the root; returns the root id. */
  finish(): Buffer {
    this.closeDir();
    for (const [serial, inode] of this.open) this.store(serial, encodeInode(inode));
    this.open.clear();
    const table = new TreeBuilder(TreeKind.Inodes, this.pages);
    for (let s = 1; s <= this.maxSerial; s++) table.pushEntry(serialKey(s), this.arena.subarray(this.start[s]!, this.start[s]! + this.length[s]!));
    return this.w.add(ObjectKind.Root, encodeRoot({ inodes: table.finish()! }));
  }

  private closeDir(): void {
    if (!this.dir) return;
    const { serial, tree } = this.dir;
    this.dir = null;
    const inode = this.open.get(serial)!;
    const root = tree.finish();
    if (root) {
      inode.form = ContentForm.Whole;
      inode.content = root;
    }
    // A directory has exactly one name, so with its content its record is complete.
    this.open.delete(serial);
    this.store(serial, encodeInode(inode));
  }

  private store(serial: number, record: Buffer): void {
    if (serial >= this.start.length) {
      let n = this.start.length;
      while (n <= serial) n *= 2;
      const s = new Uint32Array(n);
      s.set(this.start);
      const l = new Uint32Array(n);
      l.set(this.length);
      this.start = s;
      this.length = l;
    }
    if (this.used + record.length > this.arena.length) {
      const a = Buffer.allocUnsafe(Math.max(this.arena.length * 2, this.used + record.length));
      this.arena.copy(a, 0, 0, this.used);
      this.arena = a;
    }
    record.copy(this.arena, this.used);
    this.start[serial] = this.used;
    this.length[serial] = record.length;
    this.used += record.length;
    if (serial > this.maxSerial) this.maxSerial = serial;
  }
}
