/**
 * Read access to one complete filesystem state: path lookup, directory listing, inode records
 * and file content, all through authenticated object reads.
 */
import { LayerFsError } from '../../errors.js';
import type { ChunkRunReader } from '../chunk-run.js';
import { ObjectKind } from '../object-id.js';
import type { ObjectReader } from '../object-reader.js';
import { checkLength, loadExtentNode } from './extent-check.js';
import type { ExtentNode } from './extents.js';
import { ContentForm, decodeInode, decodeSerial, InodeKind, keySerial, serialKey, type Inode } from './inode.js';
import { entries, lookup, TreeKind, type PageIO } from './pages.js';
import { decodeRoot, ROOT_SERIAL } from './root.js';

export interface DirEntry {
  name: Buffer;
  serial: number;
}

export class FsView {
  readonly inodesRoot: Buffer;

  constructor(
    readonly rootId: Buffer,
    private readonly objects: ObjectReader,
    private readonly pages: PageIO,
    private readonly runs?: ChunkRunReader,
  ) {
    this.inodesRoot = decodeRoot(objects.get(rootId, ObjectKind.Root), 'filesystem root').inodes;
  }

  inode(serial: number): Inode {
    const found = this.storedInode(serial);
    if (!found) throw new LayerFsError('ERR_CORRUPT', `inode ${serial} is missing from the inode table`);
    return found;
  }

  /**
   * The record of `serial` if this state has one (a damaged record still throws), for callers
   * that ask about serials the state may lack, such as a commit's new files, without an error
   * made and caught for each.
   */
  storedInode(serial: number): Inode | undefined {
    const v = lookup(TreeKind.Inodes, this.pages, this.inodesRoot, serialKey(serial));
    return v ? decodeInode(v, serial) : undefined;
  }

  /** Every (serial, inode) in serial order. */
  *inodes(): Generator<[number, Inode]> {
    for (const [k, v] of entries(TreeKind.Inodes, this.pages, this.inodesRoot)) {
      const serial = keySerial(k);
      yield [serial, decodeInode(v, serial)];
    }
  }

  *readdir(dir: Inode, from?: Buffer): Generator<DirEntry> {
    if (dir.kind !== InodeKind.Dir) throw new LayerFsError('ERR_NOT_A_DIRECTORY', 'not a directory');
    for (const [name, v] of entries(TreeKind.Directory, this.pages, dir.content, from)) yield { name, serial: decodeSerial(v) };
  }

  child(dir: Inode, name: Buffer): number | undefined {
    if (dir.kind !== InodeKind.Dir) return undefined;
    const v = lookup(TreeKind.Directory, this.pages, dir.content, name);
    return v ? decodeSerial(v) : undefined;
  }

  /**
   * Resolves a path inside the state, component by component, without following symlinks.
   * `parts` are already-validated name bytes.
   */
  resolve(parts: Buffer[], display: string): { serial: number; inode: Inode } {
    let serial = ROOT_SERIAL;
    let inode = this.inode(serial);
    for (const part of parts) {
      if (inode.kind !== InodeKind.Dir) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `not a directory on the way to ${display}`, { path: display });
      const next = this.child(inode, part);
      if (next === undefined) throw new LayerFsError('ERR_NOT_FOUND', `no such file or directory in this state: ${display}`, { path: display });
      serial = next;
      inode = this.inode(serial);
    }
    return { serial, inode };
  }

  /** One path of an inode (its first name), found through its parents; null for the root. */
  pathOf(serial: number): Buffer | null {
    const parts: Buffer[] = [];
    const seen = new Set<number>();
    let s = serial;
    while (s !== ROOT_SERIAL) {
      // Parents recorded in a forged state can loop: each inode is passed once.
      if (seen.has(s)) throw new LayerFsError('ERR_CORRUPT', `the parents of inode ${serial} form a cycle at inode ${s}`, { hint: 'the Store is damaged or forged; run layerfs verify' });
      seen.add(s);
      const parent = this.inode(s).parents?.[0];
      if (parent === undefined) return null;
      const dir = this.inode(parent);
      let found: Buffer | undefined;
      for (const e of this.readdir(dir)) {
        if (e.serial === s) {
          found = e.name;
          break;
        }
      }
      if (!found) throw new LayerFsError('ERR_CORRUPT', `inode ${s} is not named in its parent ${parent}`);
      parts.unshift(found);
      s = parent;
    }
    return parts.length ? Buffer.concat(parts.flatMap((p, i) => (i ? [Buffer.from('/'), p] : [p]))) : null;
  }

  /**
   * The content of a regular file, chunk by chunk, in order: exactly `size` bytes, or ERR_CORRUPT.
   * `alloc`: where runs of chunks are decoded (see ChunkRunReader.pieces).
   */
  *content(file: Inode, alloc?: (bytes: number) => Buffer): Generator<Buffer> {
    if (file.kind !== InodeKind.File) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'not a regular file');
    if (file.form === ContentForm.None) {
      if (file.size !== 0) throw new LayerFsError('ERR_CORRUPT', `a file of ${file.size} bytes has no content`, { hint: 'the Store is damaged or forged; run layerfs verify' });
      return;
    }
    if (file.form === ContentForm.Whole) {
      yield checkLength(this.objects.get(file.content!, ObjectKind.Blob), file.size, file.content!, 'blob');
      return;
    }
    const objects = this.objects;
    // Iterative, one frame per level: a node's entries, each with its recorded length. A leaf's
    // chunks are read as one run (decoded and verified many at a time), or located in a few
    // statements and read one by one without a run reader.
    const map = this.runs?.mapStream(file.size);
    try {
      const root = loadExtentNode(objects, file.content!, file.size, null);
      const stack: { node: ExtentNode; i: number }[] = root.level === 0 ? [] : [{ node: root, i: 0 }];
      let leaf: ExtentNode | null = root.level === 0 ? root : null;
      while (leaf || stack.length > 0) {
        if (leaf) {
          for (const piece of this.leaf(leaf, alloc)) {
            yield piece;
            map?.advance(piece.length);
          }
          leaf = null;
          continue;
        }
        const top = stack[stack.length - 1]!;
        if (top.i >= top.node.ids.length) {
          stack.pop();
          continue;
        }
        const i = top.i++;
        const node = loadExtentNode(objects, top.node.ids[i]!, top.node.lengths[i]!, top.node.level);
        if (node.level === 0) leaf = node;
        else stack.push({ node, i: 0 });
      }
    } finally {
      map?.end();
    }
  }

  /** The chunks of a leaf of an extent tree, verified, in order. */
  private *leaf(node: ExtentNode, alloc?: (bytes: number) => Buffer): Generator<Buffer> {
    if (this.runs) {
      yield* this.runs.pieces(node.ids.map((id, i) => ({ id, length: node.lengths[i]! })), alloc);
      return;
    }
    this.objects.prefetch(node.ids);
    for (let i = 0; i < node.ids.length; i++) yield checkLength(this.objects.get(node.ids[i]!, ObjectKind.Chunk), node.lengths[i]!, node.ids[i]!, 'chunk');
  }

  readFile(file: Inode): Buffer {
    return Buffer.concat([...this.content(file)], file.size);
  }
}
