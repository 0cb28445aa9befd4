/**
 * Import of a directory tree as one complete filesystem state. Reading, chunking and hashing run
 * on the addon's thread pool a few batches ahead while this thread stores finished batches, so
 * the two overlap. Memory is bounded by the batches in flight plus one inode record per file.
 */
import { closeSync, fstatSync, openSync, readSync, realpathSync, statSync, constants as fsc } from 'node:fs';
import { sep } from 'node:path';
import { Chunker, scanPaths, type ScanEntry, type ScanEntryOk } from '../../native/index.js';
import { LayerFsError } from '../../errors.js';
import { ObjectKind, type ObjectWriter } from '../objects.js';
import type { PageStore } from '../page-io.js';
import { buildExtentTree, type Extent } from '../tree/extents.js';
import { ContentForm, encodeInode, encodeSerial, InodeKind, serialKey, type Inode } from '../tree/inode.js';
import { TreeBuilder, TreeKind } from '../tree/pages.js';
import { encodeRoot, ROOT_SERIAL } from '../tree/root.js';
import { idOf } from '../objects.js';
import { walkTree, type WalkEntry } from './walk.js';

/** Files below this many bytes are one blob object; larger ones are chunked. */
export const SMALL_FILE_THRESHOLD = 128 * 1024;
/** Files above this are streamed in pieces instead of being read whole into a batch. */
const STREAM_THRESHOLD = 8 * 1024 * 1024;
const STREAM_PIECE = 4 * 1024 * 1024;
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
  phases: { walkMs: number; readHashMs: number; writeMs: number; treeMs: number };
}

export interface ImportOptions {
  /** Paths that must not be inside the tree (the Store file and its WAL). */
  forbidden: string[];
  onProgress?: (p: ImportProgress) => void;
}

const KINDS: Record<string, InodeKind | undefined> = {
  file: InodeKind.File,
  dir: InodeKind.Dir,
  symlink: InodeKind.Symlink,
  fifo: InodeKind.Fifo,
  chardev: InodeKind.CharDev,
  blockdev: InodeKind.BlockDev,
};

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
    if (rf === real || rf.startsWith(real.endsWith(sep) ? real : real + sep)) {
      throw new LayerFsError('ERR_STORE_INSIDE_SOURCE', `the Store is inside the directory being imported`, {
        path: f,
        hint: 'keep the Store outside the imported tree',
      });
    }
  }
  return real;
}

function scanError(e: ScanEntry & { error: NonNullable<ScanEntry['error']> }): LayerFsError {
  const details: Record<string, unknown> = { path: e.error.path };
  if (e.error.errno !== undefined) details.errno = e.error.errno;
  const hint = e.error.code === 'ERR_FILE_CHANGED' ? 'the file kept changing while it was read; retry when it is quiet' : 'fix the file or its permissions and retry; nothing was stored';
  return new LayerFsError(e.error.code, e.error.message, { ...details, hint });
}

/**
 * Stores a large file by streaming it through the chunker; the file is never held whole.
 * Detects a file that changes while it is read (size, mtime or ctime moved) and fails.
 */
function streamLargeFile(path: Buffer, expect: ScanEntryOk, w: ObjectWriter, save: (node: Buffer) => Buffer): Buffer {
  const display = path.toString();
  let fd: number;
  try {
    fd = openSync(path, fsc.O_RDONLY | fsc.O_NOFOLLOW);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new LayerFsError('ERR_NATIVE_IO', `cannot open ${display}: ${code}`, { path: display, errno: code });
  }
  try {
    const before = fstatSync(fd, { bigint: true });
    const chunker = new Chunker();
    const extents: Extent[] = [];
    // Chunk bytes not yet cut: at most one maximum chunk plus one piece.
    let carry = Buffer.alloc(0);
    let total = 0;
    const piece = Buffer.allocUnsafe(STREAM_PIECE);
    const emit = (lengths: number[]): void => {
      let off = 0;
      for (const len of lengths) {
        const bytes = carry.subarray(off, off + len);
        const id = idOf(ObjectKind.Chunk, bytes);
        w.put(ObjectKind.Chunk, id, Buffer.from(bytes));
        extents.push({ id, length: len });
        off += len;
      }
      carry = carry.subarray(off);
    };
    for (;;) {
      const n = readSync(fd, piece, 0, STREAM_PIECE, null);
      if (n === 0) break;
      total += n;
      const chunk = piece.subarray(0, n);
      carry = carry.length === 0 ? Buffer.from(chunk) : Buffer.concat([carry, chunk]);
      emit(chunker.push(chunk));
    }
    emit(chunker.finish());
    const after = fstatSync(fd, { bigint: true });
    if (total !== Number(before.size) || after.size !== before.size || after.mtimeNs !== before.mtimeNs || after.ctimeNs !== before.ctimeNs || before.size !== BigInt(expect.size)) {
      throw new LayerFsError('ERR_FILE_CHANGED', `${display} changed while it was read`, { path: display, hint: 'retry when the file is quiet' });
    }
    return buildExtentTree(extents, save);
  } finally {
    closeSync(fd);
  }
}

export function storeFileContent(e: ScanEntryOk, path: Buffer, w: ObjectWriter, save: (node: Buffer) => Buffer): { form: ContentForm; content: Buffer | null } {
  if (e.size === 0) return { form: ContentForm.None, content: null };
  const d = e.digest;
  if (!e.data || !d) return { form: ContentForm.Extents, content: streamLargeFile(path, e, w, save) };
  if (!d.chunked) {
    w.put(ObjectKind.Blob, d.contentId, e.data);
    return { form: ContentForm.Whole, content: d.contentId };
  }
  for (const c of d.chunks) w.put(ObjectKind.Chunk, c.id, e.data.subarray(c.offset, c.offset + c.length));
  return { form: ContentForm.Extents, content: buildExtentTree(d.chunks.map((c) => ({ id: Buffer.from(c.id), length: c.length })), save) };
}

/**
 * Imports `source` into the open write transaction and returns the new root id. The caller
 * commits (making it visible by pointing history at it) or rolls back.
 */
export async function importTree(source: string, w: ObjectWriter, pages: PageStore, opts: ImportOptions): Promise<{ rootId: Buffer; stats: ImportStats }> {
  const t0 = performance.now();
  const real = checkSource(source, opts.forbidden);
  const forbiddenIds = new Set<string>();
  for (const f of opts.forbidden) {
    try {
      const s = statSync(f, { bigint: true });
      forbiddenIds.add(`${s.dev}:${s.ino}`);
    } catch {
      /* not created yet */
    }
  }
  const walk: WalkEntry[] = walkTree(real);
  const t1 = performance.now();
  const stats: ImportStats = { files: 0, directories: 0, symlinks: 0, specials: 0, hardLinks: 0, bytes: 0, skipped: [], phases: { walkMs: t1 - t0, readHashMs: 0, writeMs: 0, treeMs: 0 } };

  const serialOf = new Int32Array(walk.length);
  const inodes = new Map<number, Inode>();
  const children = new Map<number, { name: Buffer; serial: number }[]>();
  const linkGroups = new Map<string, number>();
  let nextSerial = ROOT_SERIAL;
  const save = (node: Buffer): Buffer => w.add(ObjectKind.Extents, node);

  const batches: Promise<ScanEntry[]>[] = [];
  let launched = 0;
  const launch = (): void => {
    if (launched >= walk.length) return;
    const end = Math.min(walk.length, launched + BATCH_ENTRIES);
    const paths = walk.slice(launched, end).map((x) => x.path);
    batches.push(scanPaths(paths, { readData: true, smallFileThreshold: SMALL_FILE_THRESHOLD, maxDataSize: STREAM_THRESHOLD } as Parameters<typeof scanPaths>[1]));
    launched = end;
  };
  for (let i = 0; i < BATCHES_IN_FLIGHT; i++) launch();

  let index = 0;
  let waitMs = 0;
  try {
    while (batches.length > 0) {
      const tw = performance.now();
      const results = await batches.shift()!;
      waitMs += performance.now() - tw;
      launch();
      for (const r of results) {
        const entry = walk[index]!;
        const i = index++;
        if (r.error) throw scanError(r as ScanEntry & { error: NonNullable<ScanEntry['error']> });
        const e = r as ScanEntryOk;
        if (forbiddenIds.has(`${e.dev}:${e.ino}`)) {
          throw new LayerFsError('ERR_STORE_INSIDE_SOURCE', `the Store is inside the directory being imported`, { path: entry.path.toString(), hint: 'keep the Store outside the imported tree' });
        }
        const kind = KINDS[e.kind];
        if (i === 0 && kind !== InodeKind.Dir) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `not a directory: ${source}`, { path: source });
        if (kind === undefined) {
          stats.skipped.push(entry.path.toString());
          continue;
        }
        const parentSerial = entry.parent >= 0 ? serialOf[entry.parent]! : 0;
        if (kind === InodeKind.File && e.nlink > 1) {
          const key = `${e.dev}:${e.ino}`;
          const existing = linkGroups.get(key);
          if (existing !== undefined) {
            serialOf[i] = existing;
            inodes.get(existing)!.nlink++;
            children.get(parentSerial)!.push({ name: entry.name, serial: existing });
            stats.hardLinks++;
            continue;
          }
          linkGroups.set(key, nextSerial);
        }
        const serial = nextSerial++;
        serialOf[i] = serial;
        if (i > 0) children.get(parentSerial)!.push({ name: entry.name, serial });
        const inode: Inode = {
          kind,
          mode: e.mode,
          uid: e.uid,
          gid: e.gid,
          mtimeNs: e.mtimeNs,
          size: 0,
          nlink: 1,
          form: ContentForm.None,
          content: null,
          xattrs: e.xattrs.map((x) => ({ name: Buffer.from(x.name), value: x.value })),
        };
        switch (kind) {
          case InodeKind.File: {
            const c = storeFileContent(e, entry.path, w, save);
            inode.size = e.size;
            inode.form = c.form;
            inode.content = c.content;
            stats.files++;
            stats.bytes += e.size;
            break;
          }
          case InodeKind.Dir:
            children.set(serial, []);
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
        inodes.set(serial, inode);
      }
      opts.onProgress?.({ files: index, totalEntries: walk.length, bytes: stats.bytes });
    }
  } catch (e) {
    // Let in-flight batches settle so no worker writes into buffers we are about to drop.
    await Promise.allSettled(batches);
    throw e;
  }
  const t2 = performance.now();
  stats.phases.readHashMs = waitMs;
  stats.phases.writeMs = t2 - t1 - waitMs;
  const rootId = buildNamespace(inodes, children, w, pages);
  stats.phases.treeMs = performance.now() - t2;
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
