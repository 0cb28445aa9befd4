/**
 * Import of a directory tree as one complete filesystem state. Reading, chunking and hashing run
 * on the addon's thread pool a few batches ahead while this thread stores finished batches, so
 * the two overlap; a file over MAX_DATA_SIZE (or that no longer fits in its batch's arena) is
 * streamed the same way, a few pieces ahead (scan-ahead.ts). Memory is bounded by design: a few
 * reused arenas of file data, a few pieces of a large file, and a few dozen bytes per entry (walk
 * table, encoded inode records); directory trees are written as they complete.
 */
import { realpathSync, statSync } from 'node:fs';
import { inodeMetadata, SCAN_KINDS } from './entry.js';
import { basename, dirname, join, sep } from 'node:path';
import type { ScanEntry, ScanEntryOk } from '../../native/scan.js';
import { LayerFsError } from '../../errors.js';
import { ObjectKind, type ObjectWriter } from '../objects.js';
import type { PageStore } from '../page-io.js';
import { ContentForm, encodeInode, encodeSerial, InodeKind, serialKey, type Inode, type TreeCounts } from '../tree/inode.js';
import { TreeBuilder, TreeKind } from '../tree/pages.js';
import { encodeRoot, ROOT_SERIAL } from '../tree/root.js';
import { storeContent, storeInMemory, type StoredContent } from './content.js';
import { NamespaceBuilder } from './namespace.js';
import { ScanAhead } from './scan-ahead.js';
import { walkTable, type WalkTable } from './walk.js';

export { SMALL_FILE_THRESHOLD, storeFileContent } from './content.js';

export interface ImportProgress {
  files: number;
  totalEntries: number;
  bytes: number;
}

export interface ImportStats extends TreeCounts {
  /** Sockets cannot be stored; their paths are listed here. */
  skipped: string[];
  /**
   * Wall time (ms) by phase: walkRead = the tree walk (readdir + lstat); chunkHash = waiting for
   * the addon's pool to read, chunk and hash file data (it runs ahead, overlapped with writing,
   * so only the wait counts); write = storing objects and building the trees. The caller adds
   * publish (history rows and COMMIT).
   */
  phases: { walkRead: number; chunkHash: number; write: number };
}

export interface ImportOptions {
  /**
   * The Store's files (the Store file, its WAL, …): left out of the tree, with the Store's
   * directory `<store>.d` and, when it is below the root, the directory holding the Store
   * (`.layerfs/`). Another name for one of them (a hard link) is refused.
   */
  forbidden: string[];
  /** Further paths to leave out: '/'-joined relative paths, a directory's ending with '/'. */
  exclude?: (relPath: string) => boolean;
  onProgress?: (p: ImportProgress) => void;
}

function checkSource(source: string, forbidden: string[]): string {
  let real: string;
  try {
    real = realpathSync(source);
    if (!statSync(real).isDirectory()) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `not a directory: ${source}`, { path: source, hint: 'give a directory to import' });
  } catch (e) {
    if (e instanceof LayerFsError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new LayerFsError('ERR_NOT_FOUND', `no such directory: ${source}`, { path: source });
    throw new LayerFsError('ERR_NATIVE_IO', `cannot open ${source}: ${code}`, { path: source, errno: code });
  }
  for (const f of forbidden) {
    let rf: string;
    try {
      rf = realpathSync(f);
    } catch {
      continue;
    }
    if (rf === real) {
      throw new LayerFsError('ERR_STORE_INSIDE_SOURCE', `the directory to import is the Store itself`, { path: f, hint: 'give the directory to import' });
    }
  }
  return real;
}

/**
 * The absolute real paths an import of `real` leaves out: the Store's files and `<store>.d`
 * where they are, and the Store's own directory when it lies below the root (a project's
 * `.layerfs/`, with whatever else is kept there).
 */
function storeLeaveOut(real: string, forbidden: string[]): string[] {
  const below = (p: string) => p.startsWith(real.endsWith(sep) ? real : real + sep);
  const out: string[] = [];
  const store = forbidden[0];
  if (store === undefined) return out;
  let realStore: string;
  try {
    realStore = join(realpathSync(dirname(store)), basename(store));
  } catch {
    return out;
  }
  const storeDir = dirname(realStore);
  if (below(storeDir)) return [storeDir];
  for (const f of [...forbidden.map((p) => join(storeDir, basename(p))), `${realStore}.d`]) if (below(f)) out.push(f);
  return out;
}

function scanError(e: ScanEntry & { error: NonNullable<ScanEntry['error']> }): LayerFsError {
  const details: Record<string, unknown> = { path: e.error.path };
  if (e.error.errno !== undefined) details.errno = e.error.errno;
  const hint = e.error.code === 'ERR_FILE_CHANGED' ? 'the file kept changing while it was read; retry when it is quiet' : 'fix the file or its permissions and retry; nothing was stored';
  return new LayerFsError(e.error.code, e.error.message, { ...details, hint });
}

/** Stat identities of the Store's files, to refuse an import that contains the Store under another name. */
function fileIds(paths: string[]): { dev: bigint; ino: bigint }[] {
  const ids: { dev: bigint; ino: bigint }[] = [];
  for (const f of paths) {
    try {
      const s = statSync(f, { bigint: true });
      ids.push({ dev: s.dev, ino: s.ino });
    } catch {
      /* not created yet */
    }
  }
  return ids;
}

/** One import's state: serials by walk index, hard-link groups, the namespace being built. */
class TreeImport {
  /** By walk index: the entry's serial, and whether it turned out to be a directory. */
  private readonly serialOf: Int32Array;
  private readonly isDir: Uint8Array;
  private readonly linkGroups = new Map<string, number>();
  private nextSerial = ROOT_SERIAL;
  readonly ns: NamespaceBuilder;
  readonly clock = { waitMs: 0 };

  constructor(
    private readonly source: string,
    private readonly walk: WalkTable,
    private readonly w: ObjectWriter,
    pages: PageStore,
    private readonly forbiddenIds: { dev: bigint; ino: bigint }[],
    readonly stats: ImportStats,
  ) {
    this.serialOf = new Int32Array(walk.count);
    this.isDir = new Uint8Array(walk.count);
    this.ns = new NamespaceBuilder(w, pages);
  }

  /** The kind of scanned entry i (undefined: a socket, left out), after the checks that refuse the whole import. */
  private checked(r: ScanEntry, i: number): InodeKind | undefined {
    if (r.error) throw scanError(r as ScanEntry & { error: NonNullable<ScanEntry['error']> });
    const e = r as ScanEntryOk;
    if (this.isForbidden(e)) {
      throw new LayerFsError('ERR_STORE_INSIDE_SOURCE', `the Store is inside the directory being imported`, { path: this.walk.path(i).toString(), hint: 'keep the Store outside the imported tree' });
    }
    const kind = SCAN_KINDS[e.kind];
    if (i === 0 && kind !== InodeKind.Dir) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `not a directory: ${this.source}`, { path: this.source });
    const parent = this.walk.parent(i);
    if (kind !== undefined && i > 0 && !this.isDir[parent]) {
      // Listed as a directory by the walk, something else when scanned.
      throw new LayerFsError('ERR_FILE_CHANGED', `${this.walk.path(parent).toString()} changed while it was read`, { path: this.walk.path(parent).toString(), hint: 'retry when the tree is quiet' });
    }
    return kind;
  }

  /** Whether `e` is one of the Store's files (a loop: a closure per entry costs an allocation each). */
  private isForbidden(e: ScanEntryOk): boolean {
    for (let k = 0; k < this.forbiddenIds.length; k++) if (this.forbiddenIds[k]!.ino === e.ino && this.forbiddenIds[k]!.dev === e.dev) return true;
    return false;
  }

  /**
   * Stores scanned entry i of the walk. Synchronous for everything the scan returned whole: a
   * promise only for a file whose content is streamed from disk (over MAX_DATA_SIZE, or left
   * out of its batch's arena), so the thousands of small entries of a tree cost no promise,
   * async frame or microtask each.
   */
  add(r: ScanEntry, i: number): Promise<void> | undefined {
    const kind = this.checked(r, i);
    if (kind === undefined) {
      this.stats.skipped.push(this.walk.path(i).toString());
      return undefined;
    }
    const e = r as ScanEntryOk;
    const parentSerial = i > 0 ? this.serialOf[this.walk.parent(i)]! : 0;
    if (kind === InodeKind.File && e.nlink > 1 && this.linkedName(e, i, parentSerial)) return undefined;
    const serial = this.nextSerial++;
    this.serialOf[i] = serial;
    if (i > 0) this.ns.addName(parentSerial, this.walk.name(i), serial);
    const inode = inodeMetadata(e, kind, i > 0 ? [parentSerial] : []);
    if (kind === InodeKind.File && !e.data && e.size !== 0) return this.streamed(inode, serial, e, i);
    if (kind === InodeKind.File) this.setContent(inode, e, storeInMemory(e, this.w));
    else this.fill(inode, kind, e, i);
    this.place(serial, inode, kind, e);
    return undefined;
  }

  /** A file the scan did not read: its content streamed from disk, then its record. */
  private async streamed(inode: Inode, serial: number, e: ScanEntryOk, i: number): Promise<void> {
    this.setContent(inode, e, await storeContent(e, this.walk.path(i), this.w, this.clock));
    this.place(serial, inode, InodeKind.File, e);
  }

  /** Directories get their content, and files with other names more parents, later. */
  private place(serial: number, inode: Inode, kind: InodeKind, e: ScanEntryOk): void {
    if (kind === InodeKind.Dir || (kind === InodeKind.File && e.nlink > 1)) this.ns.setOpen(serial, inode);
    else this.ns.setFinal(serial, inode);
  }

  /** True when entry i is a further name of a file already stored (a hard link); else starts its group. */
  private linkedName(e: ScanEntryOk, i: number, parentSerial: number): boolean {
    const key = `${e.dev}:${e.ino}`;
    const existing = this.linkGroups.get(key);
    if (existing === undefined) {
      this.linkGroups.set(key, this.nextSerial);
      return false;
    }
    this.serialOf[i] = existing;
    this.ns.addParent(existing, parentSerial);
    this.ns.addName(parentSerial, this.walk.name(i), existing);
    this.stats.hardLinks++;
    return true;
  }

  private setContent(inode: Inode, e: ScanEntryOk, c: StoredContent): void {
    inode.size = e.size;
    inode.form = c.form;
    inode.content = c.content;
    this.stats.files++;
    this.stats.bytes += e.size;
  }

  /** The kind-specific part of a record other than a file's: a directory, a target or a device. */
  private fill(inode: Inode, kind: InodeKind, e: ScanEntryOk, i: number): void {
    const stats = this.stats;
    switch (kind) {
      case InodeKind.Dir:
        this.isDir[i] = 1;
        stats.directories++;
        break;
      case InodeKind.Symlink:
        inode.target = e.linkTarget ?? Buffer.alloc(0);
        inode.size = inode.target.length;
        stats.symlinks++;
        break;
      default:
        inode.rdev = e.rdev;
        stats.specials++;
    }
  }
}

/**
 * Imports `source` into the open write transaction and returns the new root id. The caller
 * commits (making it visible by pointing history at it) or rolls back.
 */
export async function importTree(source: string, w: ObjectWriter, pages: PageStore, opts: ImportOptions): Promise<{ rootId: Buffer; stats: ImportStats }> {
  const t0 = performance.now();
  const real = checkSource(source, opts.forbidden);
  const forbiddenIds = fileIds(opts.forbidden);
  const walk = walkTable(real, { paths: storeLeaveOut(real, opts.forbidden), exclude: opts.exclude });
  w.expectImport(walk.count);
  const t1 = performance.now();
  const stats: ImportStats = { files: 0, directories: 0, symlinks: 0, specials: 0, hardLinks: 0, bytes: 0, skipped: [], phases: { walkRead: t1 - t0, chunkHash: 0, write: 0 } };
  const run = new TreeImport(source, walk, w, pages, forbiddenIds, stats);
  const scans = new ScanAhead(walk);
  let index = 0;
  try {
    while (!scans.done) {
      const { batch, release } = await scans.next(run.clock);
      for (let j = 0; j < batch.count; j++) {
        const pending = run.add(batch.entry(j)!, index++);
        if (pending) await pending;
      }
      // Everything of this batch is copied into packs now: its arena can take another batch.
      release();
      opts.onProgress?.({ files: index, totalEntries: walk.count, bytes: stats.bytes });
    }
  } catch (e) {
    await scans.settle();
    throw e;
  }
  const rootId = run.ns.finish();
  stats.phases.chunkHash = run.clock.waitMs;
  stats.phases.write = performance.now() - t1 - run.clock.waitMs;
  return { rootId, stats };
}

/** Writes directory trees (deepest last-assigned first), the inode table and the root object. */
export function buildNamespace(inodes: Map<number, Inode>, children: Map<number, { name: Buffer; serial: number }[]>, w: ObjectWriter, pages: PageStore): Buffer {
  const serials = [...inodes.keys()].sort((a, b) => a - b);
  for (const inode of inodes.values()) inode.parents = [];
  for (const [serial, list] of children) for (const c of list) inodes.get(c.serial)!.parents!.push(serial);
  for (const inode of inodes.values()) {
    inode.parents!.sort((a, b) => a - b);
    inode.nlink = inode.kind === InodeKind.Dir ? 1 : Math.max(1, inode.parents!.length);
  }
  for (const [serial, list] of children) {
    const dir = inodes.get(serial)!;
    if (list.length === 0) continue;
    list.sort((a, b) => Buffer.compare(a.name, b.name));
    const b = new TreeBuilder(TreeKind.Directory, pages);
    for (const c of list) b.pushEntry(c.name, encodeSerial(c.serial));
    dir.form = ContentForm.Whole;
    dir.content = b.finish();
  }
  const table = new TreeBuilder(TreeKind.Inodes, pages);
  for (const s of serials) table.pushEntry(serialKey(s), encodeInode(inodes.get(s)!));
  const inodesRoot = table.finish()!;
  return w.add(ObjectKind.Root, encodeRoot({ inodes: inodesRoot }));
}
