/**
 * Records what changed in a materialized Workspace as inode records, through the same content
 * path as import (store inodeFromScan → storeContent): small files are read and hashed a batch
 * at a time on the addon's pool, files over MAX_DATA_SIZE are streamed in pieces and never held
 * whole, so a commit's memory does not grow with the size of a changed file.
 *
 * Racy edits: a stat cache entry is only trustworthy if any later write changes its stat. A
 * write in the same timestamp tick as the ctime the walk saw, with the same size, leaves
 * size/mtime/ctime as they were; if the content were read within that tick too, the cache
 * would call the newer content clean forever (git's "racy clean" problem). So changed files are
 * read only once the clock is a full tick past their ctime (racyWaitMs): every write after the
 * read then gets a later ctime and the next commit sees it.
 */
import { scanPathsOrThrow, WalkKind, type ScanEntryOk } from '../native/index.js';
import { chunkDeltaSource, ContentForm, InodeKind, inodeFromScan, SMALL_FILE_THRESHOLD, type Inode, type NamespaceEditor, type ObjectWriter, type Store } from '../store/index.js';
import { LayerFsError } from '../errors.js';
import type { ChangeSet } from './changes.js';

/** Changed paths per scan batch. */
const SCAN_BATCH = 256;
/** Files larger than this are streamed (storeContent → readChunks) rather than read whole. */
const MAX_DATA_SIZE = 1024 * 1024;
/** The most file bytes one batch reads whole; files past it are streamed like large ones. */
const MAX_BATCH_DATA = 8 * 1024 * 1024;

/**
 * Longest timestamp tick assumed for filesystems with sub-second times: Linux stamps inodes
 * from the coarse clock, one jiffy (1–10 ms) behind the precise one; 20 ms leaves slack.
 */
export const RACY_TICK_MS = 20;
/** Filesystems whose times have whole seconds only (ctime without nanoseconds): FAT rounds to 2 s. */
export const COARSE_TICK_MS = 2000;

/** Time accounting of one recording: `waitMs` waiting for the addon, `racyWaitMs` for the clock. */
export interface RecordClock {
  waitMs: number;
  racyWaitMs: number;
}

/**
 * How long to wait before reading files whose newest ctime is `ctimeNs`, at wall time `nowMs`,
 * so that the read happens a full timestamp tick after it. 0 when the tick has passed.
 */
export function racyWaitMs(ctimeNs: bigint, nowMs: number): number {
  if (ctimeNs <= 0n) return 0;
  const tick = ctimeNs % 1_000_000_000n === 0n ? COARSE_TICK_MS : RACY_TICK_MS;
  const ready = Number(ctimeNs / 1_000_000n) + 1 + tick;
  return Math.max(0, ready - nowMs);
}

/**
 * Newest ctime among the changed entries of `cs` whose content is read (0 when none): files and
 * symlink targets. A directory's record takes nothing from a read, so a deletion, which only
 * changes its directory, waits for nothing.
 */
function newestChangedCtime(cs: ChangeSet): bigint {
  let max = 0n;
  for (const { index } of cs.changedSerials.values()) {
    const k = cs.now.kind[index];
    if (k !== WalkKind.File && k !== WalkKind.Symlink) continue;
    const c = cs.now.ctimeNs[index]!;
    if (c > max) max = c;
  }
  return max;
}

async function waitPastTick(cs: ChangeSet, clock: RecordClock): Promise<void> {
  const newest = newestChangedCtime(cs);
  for (;;) {
    const ms = racyWaitMs(newest, Date.now());
    if (ms <= 0) return;
    const t = performance.now();
    await new Promise((r) => setTimeout(r, ms));
    clock.racyWaitMs += performance.now() - t;
  }
}

function scanBatch(paths: Buffer[]): Promise<ScanEntryOk[]> {
  return scanPathsOrThrow(paths, {
    readData: true,
    smallFileThreshold: SMALL_FILE_THRESHOLD,
    maxDataSize: MAX_DATA_SIZE,
    maxBatchData: MAX_BATCH_DATA,
    digestOversize: false,
  });
}

type View = ReturnType<Store['view']>;

function safeInode(view: View, serial: number) {
  try {
    return view.inode(serial);
  } catch (e) {
    if (e instanceof LayerFsError && e.code === 'ERR_CORRUPT') return undefined;
    throw e;
  }
}

/**
 * The stored file a changed file is a new version of, for delta bases: the file at the same path
 * first (a replaced file may get a recycled inode, and with it another file's serial), else the
 * serial's own previous record. A hint only: undefined when neither is a readable file.
 */
function predecessor(base: View, serial: number, pathSerial: number | undefined): Inode | undefined {
  for (const s of pathSerial ? [pathSerial, serial] : [serial]) {
    const old = safeInode(base, s);
    if (old?.kind === InodeKind.File && old.form !== ContentForm.None) return old;
  }
  return undefined;
}

/**
 * Reads every changed serial of `cs` (the first changed path of each), stores its content and
 * sets its record in `editor`; a directory keeps its stored entries (names are edited apart).
 * The next batch is read while this one is stored. `oldSerialAt`: the serial the path of a
 * change-set entry had in the stored state (0 if none), for delta bases.
 */
export async function recordChanges(cs: ChangeSet, base: View, editor: NamespaceEditor, w: ObjectWriter, clock: RecordClock, oldSerialAt?: (index: number) => number): Promise<void> {
  await waitPastTick(cs, clock);
  const changed = [...cs.changedSerials];
  const batches: { start: number; paths: Buffer[]; scanned: Promise<ScanEntryOk[]> }[] = [];
  const start = (i: number) => {
    if (i >= changed.length) return;
    const paths = changed.slice(i, i + SCAN_BATCH).map(([, c]) => cs.absPath(c.index));
    const scanned = scanBatch(paths);
    // Settled later; an early failure must not surface as an unhandled rejection meanwhile.
    scanned.catch(() => undefined);
    batches.push({ start: i, paths, scanned });
  };
  start(0);
  try {
    for (let b = 0; b < batches.length; b++) {
      const { start: i, paths, scanned } = batches[b]!;
      const t = performance.now();
      const entries = await scanned;
      clock.waitMs += performance.now() - t;
      start(i + SCAN_BATCH);
      for (let j = 0; j < entries.length; j++) {
        const [serial, { index, parents }] = changed[i + j]!;
        const e = entries[j]!;
        const before = e.kind === 'file' ? predecessor(base, serial, oldSerialAt?.(index)) : undefined;
        // A changed large file's new chunks are offered the old version's chunks as delta bases.
        w.deltaSource = chunkDeltaSource(before, e.size, (id) => w.read(id));
        let inode;
        try {
          inode = await inodeFromScan(e, paths[j]!, w, clock);
        } finally {
          w.deltaSource = undefined;
        }
        // A changed small file: its blob is still the newest of its group.
        if (inode?.form === ContentForm.Whole && before?.form === ContentForm.Whole && !before.content!.equals(inode.content!)) w.suggestBase(inode.content!, before.content!);
        if (!inode) continue;
        if (inode.kind === InodeKind.Dir) {
          const old = safeInode(base, serial);
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
      }
    }
  } finally {
    await Promise.allSettled(batches.map((b) => b.scanned));
  }
}
