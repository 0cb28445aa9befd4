/**
 * Records what changed in a materialized Workspace as inode records, through the same content
 * path as import (store ScanAhead → inodeFromScan → storeContent): small files are read and
 * hashed a few batches ahead on the addon's pool into reused arenas, files over MAX_DATA_SIZE
 * are streamed in pieces and never held whole, so a commit's memory does not grow with the
 * number or size of changed files.
 *
 * Racy edits: a stat cache entry is only trustworthy if any later write changes its stat. Changed
 * files are read at once; the entries whose read began within the timestamp tick of their ctime
 * are marked racy in the new stat cache (racy.ts), so the next walk offers them again.
 */
import { mallocTrimSoon } from '../native/info.js';
import { WalkKind } from '../native/walk.js';
import type { ScanEntry, ScanEntryOk } from '../native/scan.js';
import { chunkDeltaSource, ContentForm, InodeKind, inodeFromScan, ObjectKind, ScanAhead, type Inode, type NamespaceEditor, type ObjectWriter, type Store } from '../store/index.js';
import { LayerFsError } from '../errors.js';
import type { ChangeSet } from './changes.js';

/**
 * Longest timestamp tick assumed for filesystems with sub-second times: Linux stamps inodes
 * from the coarse clock, one jiffy (1–10 ms) behind the precise one; 20 ms leaves slack.
 */
export const RACY_TICK_MS = 20;
/** Filesystems whose times have whole seconds only (ctime without nanoseconds): FAT rounds to 2 s. */
export const COARSE_TICK_MS = 2000;

/** Time accounting of one recording: `waitMs` waiting for the addon to read and hash. */
export interface RecordClock {
  waitMs: number;
}

/**
 * How long after wall time `nowMs` a read of a file whose ctime is `ctimeNs` must begin so that
 * every later write gets a later ctime: a full timestamp tick after it. 0 when the tick has
 * passed (the entry is not racy).
 */
export function racyWaitMs(ctimeNs: bigint, nowMs: number): number {
  if (ctimeNs <= 0n) return 0;
  const tick = ctimeNs % 1_000_000_000n === 0n ? COARSE_TICK_MS : RACY_TICK_MS;
  const ready = Number(ctimeNs / 1_000_000n) + 1 + tick;
  return Math.max(0, ready - nowMs);
}

type View = ReturnType<Store['view']>;

/** The record `serial` has in `view`, if any and readable. */
function safeInode(view: View, serial: number): Inode | undefined {
  try {
    return view.storedInode(serial);
  } catch (e) {
    if (e instanceof LayerFsError && e.code === 'ERR_CORRUPT') return undefined;
    throw e;
  }
}

/** safeInode, each serial looked up once (a changed file's serial is asked up to three times). */
function storedRecords(view: View): (serial: number) => Inode | undefined {
  const seen = new Map<number, Inode | undefined>();
  return (serial) => {
    if (!seen.has(serial)) seen.set(serial, safeInode(view, serial));
    return seen.get(serial);
  };
}

/**
 * The stored file a changed file is a new version of, for delta bases: the file at the same path
 * first (a replaced file may get a recycled inode, and with it another file's serial), else the
 * serial's own previous record. A hint only: undefined when neither is a readable file.
 */
function predecessor(stored: (serial: number) => Inode | undefined, serial: number, pathSerial: number | undefined): Inode | undefined {
  for (const s of pathSerial ? [pathSerial, serial] : [serial]) {
    const old = stored(s);
    if (old?.kind === InodeKind.File && old.form !== ContentForm.None) return old;
  }
  return undefined;
}

function checked(r: ScanEntry): ScanEntryOk {
  if (!r.error) return r;
  const details: { path: string; errno?: string } = { path: r.error.path };
  if (r.error.errno !== undefined) details.errno = r.error.errno;
  throw new LayerFsError(r.error.code, r.error.message, details);
}

/** Change sets of at most this many changed serials have their delta bases read before the write lock. */
export const BASES_AHEAD_LIMIT = 256;

/**
 * Reads the previous versions of a small change set's changed files (their delta bases,
 * recordOne's predecessor) and the tree pages that lead to them, in one read snapshot before the
 * write lock is taken: the reader keeps the bases (ObjectReader.remember) and the page cache the
 * pages, so the transaction finds them in memory and holds the lock for less. A hint only:
 * whatever cannot be read here is read (and its error reported) inside the transaction.
 */
export function readBasesAhead(store: Store, cs: ChangeSet, baseRoot: Buffer, oldSerialAt: (index: number) => number): void {
  if (cs.changedSerials.size > BASES_AHEAD_LIMIT) return;
  try {
    store.read(() => {
      const base = store.view(baseRoot);
      for (const [serial, { index }] of cs.changedSerials) {
        if (cs.now.kind[index] !== WalkKind.File) continue;
        const old = predecessor((s) => safeInode(base, s), serial, oldSerialAt(index));
        if (old?.form === ContentForm.Whole) store.objects.remember(old.content!, ObjectKind.Blob, store.objects.get(old.content!, ObjectKind.Blob));
      }
    });
  } catch {
    // Read again inside the transaction, which reports what is wrong.
  }
}

/**
 * A commit's scan batches are this many times smaller than an import's (ScanAhead `divide`):
 * 256 files and 3 MiB each, 12 MiB of arenas in flight instead of 24.
 */
const SCAN_DIVIDE = 2;
/** Batches of changed files between two mallocTrim calls of a commit (2,048 files). */
const TRIM_EVERY_BATCHES = 4 * SCAN_DIVIDE;

/** The changed files of a change set being read ahead (startReading), stored by recordChanges. */
export interface ChangeReading {
  /** The changed serials in the order they are read (the change set's own order, not copied). */
  readonly changed: Iterator<Changed>;
  readonly scans: ScanAhead;
  /**
   * A small commit (at most BASES_AHEAD_LIMIT changed serials): the Store handle keeps its new
   * blobs (ObjectWriter.keepWritten), which the Workspace's next commit reads as delta bases when
   * the same files change again, as an agent's edits do.
   */
  readonly keep: boolean;
}

/**
 * Starts reading the changed files of `cs`: the addon reads the first batches into reused arenas
 * (ScanAhead, as import does). Called before the write transaction, so the first reads do not
 * hold the Store's write lock (a small commit's files are all read by then). The caller must
 * pass the result to recordChanges, or `settle` it; it must take the wall time for racy
 * entries (racy.ts) before calling this.
 */
export function startReading(cs: ChangeSet): ChangeReading {
  // The scans run ahead of the records over the change set's own order; they ask for each path
  // once, and for sizes (the walk's) to end batches where the arena is full.
  const count = cs.changedSerials.size;
  const order = new Uint32Array(count);
  let k = 0;
  for (const c of cs.changedSerials.values()) order[k++] = c.index;
  const list = { count, path: (i: number) => cs.absPath(order[i]!), size: (i: number) => Number(cs.now.size[order[i]!]) };
  return { changed: cs.changedSerials.entries(), scans: new ScanAhead(list, { divide: SCAN_DIVIDE }), keep: count <= BASES_AHEAD_LIMIT };
}

/**
 * Stores every changed serial `reading` reads (the first changed path of each) and sets its
 * record in `editor`; a directory keeps its stored entries (names are edited apart). The next
 * batches are read while this one is stored. `oldSerialAt`: the serial the path of a change-set
 * entry had in the stored state (0 if none), for delta bases.
 */
export async function recordChanges(reading: ChangeReading, base: View, editor: NamespaceEditor, w: ObjectWriter, clock: RecordClock, oldSerialAt?: (index: number) => number): Promise<Set<number>> {
  const { changed, scans, keep } = reading;
  const same = new Set<number>();
  let batches = 0;
  try {
    while (!scans.done) {
      const { batch, paths, release } = await scans.next(clock);
      for (let j = 0; j < batch.count; j++) {
        const c = changed.next().value!;
        if (await recordOne(c, checked(batch.entry(j)!), paths[j]!, base, editor, w, clock, keep, oldSerialAt)) same.add(c[0]);
      }
      // Everything of this batch is copied into packs now: its arena can take another batch.
      release();
      // A long commit gives freed memory back now and then (native mallocTrim): resident memory
      // then follows what is live, not what the C heap kept of collected Buffers. On a thread of
      // its own: 200 ms of the real tree's commit on this thread were these trims.
      if (++batches % TRIM_EVERY_BATCHES === 0) mallocTrimSoon();
    }
  } catch (e) {
    await scans.settle();
    throw e;
  }
  return same;
}

type Changed = [serial: number, change: { index: number; parents: number[] }];

/**
 * Stores one scanned changed serial and sets its record in `editor`; true when a file or symlink
 * records exactly what the serial recorded in `base` (a racy entry read again, racy.ts).
 */
async function recordOne([serial, { index, parents }]: Changed, e: ScanEntryOk, path: Buffer, base: View, editor: NamespaceEditor, w: ObjectWriter, clock: RecordClock, keep: boolean, oldSerialAt?: (index: number) => number): Promise<boolean> {
  const stored = storedRecords(base);
  const before = e.kind === 'file' ? predecessor(stored, serial, oldSerialAt?.(index)) : undefined;
  // A changed large file's new chunks are offered the old version's chunks as delta bases.
  w.deltaSource = chunkDeltaSource(before, e.size, (id) => w.read(id));
  let inode;
  try {
    inode = await inodeFromScan(e, path, w, clock);
  } finally {
    w.deltaSource = undefined;
  }
  // A changed small file: its blob is still the newest of its group.
  if (inode?.form === ContentForm.Whole && before?.form === ContentForm.Whole && !before.content!.equals(inode.content!)) w.proposeBase(inode.content!, before.content!);
  if (keep && inode?.form === ContentForm.Whole && inode.kind === InodeKind.File) w.keepWritten(inode.content!);
  if (!inode) return false;
  if (inode.kind === InodeKind.Dir) {
    const old = stored(serial);
    if (old && old.kind === InodeKind.Dir) {
      inode.form = old.form;
      inode.content = old.content;
    } else {
      inode.form = ContentForm.None;
      inode.content = null;
    }
  }
  inode.parents = parents;
  // Bases were offered above (the path's previous file first): the editor need not again.
  editor.setInode(serial, inode, before !== undefined);
  if (inode.kind !== InodeKind.File && inode.kind !== InodeKind.Symlink) return false;
  const old = stored(serial);
  return old !== undefined && sameRecord(old, inode);
}

const sameBytes = (a: Buffer | null | undefined, b: Buffer | null | undefined): boolean => (a ?? null) === (b ?? null) || (a != null && b != null && a.equals(b));

/** Whether two file or symlink records say the same, parents compared as sets with counts. */
function sameRecord(a: Inode, b: Inode): boolean {
  if (a.kind !== b.kind || a.mode !== b.mode || a.uid !== b.uid || a.gid !== b.gid || a.mtimeNs !== b.mtimeNs || a.size !== b.size || a.form !== b.form) return false;
  if (!sameBytes(a.content, b.content) || !sameBytes(a.target, b.target) || a.xattrs.length !== b.xattrs.length) return false;
  const pa = [...(a.parents ?? [])].sort((x, y) => x - y);
  const pb = [...(b.parents ?? [])].sort((x, y) => x - y);
  if (pa.length !== pb.length || pa.some((p, k) => p !== pb[k])) return false;
  const xa = new Map(a.xattrs.map((x) => [x.name.toString('latin1'), x.value]));
  return b.xattrs.every((x) => xa.get(x.name.toString('latin1'))?.equals(x.value) === true);
}
