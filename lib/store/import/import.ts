/**
 * Import of a directory tree as one complete filesystem state. Reading, chunking and hashing run
 * on the addon's thread pool a few batches ahead while this thread stores finished batches, so
 * the two overlap; a file over MAX_DATA_SIZE (or that no longer fits in its batch's arena) is
 * streamed the same way, a few pieces ahead. Memory is bounded by design: BATCHES_IN_FLIGHT + 1
 * arenas of file data, a few pieces of a large file, and a few dozen bytes per entry (walk
 * table, encoded inode records); directory trees are written as they complete.
 */
import { realpathSync, statSync } from 'node:fs';
import { inodeMetadata, SCAN_KINDS } from './entry.js';
import { basename, dirname, join, sep } from 'node:path';
import { scanPaths, type ScanEntry, type ScanEntryOk } from '../../native/index.js';
import { LayerFsError } from '../../errors.js';
import { ObjectKind, type ObjectWriter } from '../objects.js';
import type { PageStore } from '../page-io.js';
import { ContentForm, encodeInode, encodeSerial, InodeKind, serialKey, type Inode } from '../tree/inode.js';
import { TreeBuilder, TreeKind } from '../tree/pages.js';
import { encodeRoot, ROOT_SERIAL } from '../tree/root.js';
import { SMALL_FILE_THRESHOLD, storeContent, storeInMemory } from './content.js';
import { NamespaceBuilder } from './namespace.js';
import { walkTable } from './walk.js';

export { SMALL_FILE_THRESHOLD, storeFileContent } from './content.js';

/** Files larger than this are streamed one at a time instead of being read whole into a batch. */
const MAX_DATA_SIZE = 1024 * 1024;
/**
 * Each batch reads its files into an arena of this size, reused batch after batch, so file data
 * costs no allocation and leaves no garbage; files that do not fit are streamed like large ones.
 */
const ARENA_BYTES = 6 * 1024 * 1024;
const BATCH_ENTRIES = 512;
const BATCHES_IN_FLIGHT = 3;

export interface ImportProgress {
  files: number;
  totalEntries: number;
  bytes: number;
}

export interface ImportStats {
  files: number;
  directories: number;
  symlinks: number;
  specials: number;
  hardLinks: number;
  bytes: number;
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

/**
 * Imports `source` into the open write transaction and returns the new root id. The caller
 * commits (making it visible by pointing history at it) or rolls back.
 */
export async function importTree(source: string, w: ObjectWriter, pages: PageStore, opts: ImportOptions): Promise<{ rootId: Buffer; stats: ImportStats }> {
  const t0 = performance.now();
  const real = checkSource(source, opts.forbidden);
  const forbiddenIds: { dev: bigint; ino: bigint }[] = [];
  for (const f of opts.forbidden) {
    try {
      const s = statSync(f, { bigint: true });
      forbiddenIds.push({ dev: s.dev, ino: s.ino });
    } catch {
      /* not created yet */
    }
  }
  const walk = walkTable(real, { paths: storeLeaveOut(real, opts.forbidden), exclude: opts.exclude });
  const t1 = performance.now();
  const stats: ImportStats = { files: 0, directories: 0, symlinks: 0, specials: 0, hardLinks: 0, bytes: 0, skipped: [], phases: { walkRead: t1 - t0, chunkHash: 0, write: 0 } };

  // By walk index: the entry's serial, and whether it turned out to be a directory.
  const serialOf = new Int32Array(walk.count);
  const isDir = new Uint8Array(walk.count);
  const linkGroups = new Map<string, number>();
  const ns = new NamespaceBuilder(w, pages);
  let nextSerial = ROOT_SERIAL;

  // One arena per batch in flight, plus the one whose entries are being stored.
  const arenas: Buffer[] = Array.from({ length: BATCHES_IN_FLIGHT + 1 }, () => Buffer.allocUnsafeSlow(ARENA_BYTES));
  const batches: { results: Promise<ScanEntry[]>; arena: Buffer }[] = [];
  let launched = 0;
  const launch = (): void => {
    if (launched >= walk.count) return;
    const end = Math.min(walk.count, launched + BATCH_ENTRIES);
    const paths: Buffer[] = [];
    for (let i = launched; i < end; i++) paths.push(walk.path(i));
    const arena = arenas.pop()!;
    // Files not read here (too large, or no room left in the arena) come back with metadata only.
    batches.push({ arena, results: scanPaths(paths, { readData: true, smallFileThreshold: SMALL_FILE_THRESHOLD, maxDataSize: MAX_DATA_SIZE, dataArena: arena, digestOversize: false }) });
    launched = end;
  };
  for (let i = 0; i < BATCHES_IN_FLIGHT; i++) launch();

  let index = 0;
  const clock = { waitMs: 0 };
  try {
    while (batches.length > 0) {
      const tw = performance.now();
      const batch = batches.shift()!;
      const results = await batch.results;
      clock.waitMs += performance.now() - tw;
      launch();
      for (const r of results) {
        const i = index++;
        if (r.error) throw scanError(r as ScanEntry & { error: NonNullable<ScanEntry['error']> });
        const e = r as ScanEntryOk;
        if (forbiddenIds.some((f) => f.ino === e.ino && f.dev === e.dev)) {
          throw new LayerFsError('ERR_STORE_INSIDE_SOURCE', `the Store is inside the directory being imported`, { path: walk.path(i).toString(), hint: 'keep the Store outside the imported tree' });
        }
        const kind = SCAN_KINDS[e.kind];
        if (i === 0 && kind !== InodeKind.Dir) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `not a directory: ${source}`, { path: source });
        if (kind === undefined) {
          stats.skipped.push(walk.path(i).toString());
          continue;
        }
        const parent = walk.parent(i);
        if (i > 0 && !isDir[parent]) {
          // Listed as a directory by the walk, something else when scanned.
          throw new LayerFsError('ERR_FILE_CHANGED', `${walk.path(parent).toString()} changed while it was read`, { path: walk.path(parent).toString(), hint: 'retry when the tree is quiet' });
        }
        const parentSerial = i > 0 ? serialOf[parent]! : 0;
        if (kind === InodeKind.File && e.nlink > 1) {
          const key = `${e.dev}:${e.ino}`;
          const existing = linkGroups.get(key);
          if (existing !== undefined) {
            serialOf[i] = existing;
            ns.addParent(existing, parentSerial);
            ns.addName(parentSerial, walk.name(i), existing);
            stats.hardLinks++;
            continue;
          }
          linkGroups.set(key, nextSerial);
        }
        const serial = nextSerial++;
        serialOf[i] = serial;
        if (i > 0) ns.addName(parentSerial, walk.name(i), serial);
        const inode: Inode = { ...inodeMetadata(e, kind), parents: i > 0 ? [parentSerial] : [] };
        switch (kind) {
          case InodeKind.File: {
            const c = e.data || e.size === 0 ? storeInMemory(e, w) : await storeContent(e, walk.path(i), w, clock);
            inode.size = e.size;
            inode.form = c.form;
            inode.content = c.content;
            stats.files++;
            stats.bytes += e.size;
            break;
          }
          case InodeKind.Dir:
            isDir[i] = 1;
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
        // Directories get their content, and files with other names more parents, later.
        if (kind === InodeKind.Dir || (kind === InodeKind.File && e.nlink > 1)) ns.setOpen(serial, inode);
        else ns.setFinal(serial, inode);
      }
      // Everything of this batch is copied into packs now: its arena can take another batch.
      arenas.push(batch.arena);
      opts.onProgress?.({ files: index, totalEntries: walk.count, bytes: stats.bytes });
    }
  } catch (e) {
    // Let in-flight batches settle so no worker writes into buffers we are about to drop.
    await Promise.allSettled(batches.map((b) => b.results));
    throw e;
  }
  const rootId = ns.finish();
  stats.phases.chunkHash = clock.waitMs;
  stats.phases.write = performance.now() - t1 - clock.waitMs;
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
