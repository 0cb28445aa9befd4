/**
 * A mount's prestore thread (prestore.ts): stores the jobs of changed files its serving thread
 * posts, each in a write transaction of its own on a connection of its own, at the lowest CPU
 * priority, so it runs on what the cores leave idle while a large change is written (an rsync
 * keeps the serving thread and itself waiting on each other's round trips: a quarter of two
 * cores stood idle). What it stores is published by no state until the commit takes it
 * (overlay-prestore.ts), which it does only at the same gc epoch (lib/store/gc-epoch.ts).
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { LayerFsError } from '../errors.js';
import { Store, type Inode } from '../store/index.js';
import { PAGE_CACHE_BYTES, PRESTORE_CACHE_KIB } from './budget.js';
import { storeSpooledSync, type SpooledFiles } from './commit-content.js';
import { PrestoreCell, type FromPrestore, type PrestoreData, type PrestoredFile, type PrestoreJobFile, type ToPrestore } from './prestore-wire.js';
import { StoredContents } from './stored-contents.js';

const data = workerData as PrestoreData;
/** The scan batches' arenas, kept from job to job. */
const arenas: Buffer[] = [];
const cells = new Int32Array(data.cells);

/** This thread only, at nice 19: Linux takes a thread id where setpriority(2) wants a process. */
function lowerPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isSafeInteger(tid) && tid > 0) setPriority(tid, 19);
  } catch {
    // Without /proc (or the right to change it) the thread runs at the process's priority.
  }
}

function stopAsked(): void {
  if (Atomics.load(cells, PrestoreCell.Stop) !== 0) throw new LayerFsError('ERR_ABORTED', 'the commit started: this job stores nothing');
}

/** A predecessor as it came through postMessage: its content id a plain Uint8Array again. */
function inode(p: Inode | undefined): Inode | undefined {
  if (!p) return undefined;
  const c = p.content as Uint8Array | null;
  return { ...p, content: c ? Buffer.from(c.buffer, c.byteOffset, c.byteLength) : null };
}

function run(store: Store, files: PrestoreJobFile[]): FromPrestore {
  const t0 = performance.now();
  const list: SpooledFiles = {
    count: files.length,
    serial: (i) => files[i]!.serial,
    size: (i) => files[i]!.size,
    path: (i) => files[i]!.path,
    predecessor: (i) => inode(files[i]!.predecessor),
  };
  const out = new StoredContents();
  const build = { bytesRead: 0, chunksHashed: 0 };
  let epoch = -1;
  store.writeSync((w) => {
    epoch = store.gcEpoch();
    storeSpooledSync(list, w, build, out, stopAsked, stopAsked, arenas);
  });
  const stored: PrestoredFile[] = [];
  for (const f of files) {
    const c = out.get(f.serial);
    if (c) stored.push({ serial: f.serial, edit: f.edit, base: f.base, form: c.form, id: c.id, size: c.size });
  }
  const m = process.memoryUsage();
  return { type: 'stored', epoch, files: stored, ms: performance.now() - t0, heap: m.heapTotal, external: m.external };
}

function answer(store: Store, m: ToPrestore & { type: 'job' }): FromPrestore {
  try {
    if (Atomics.load(cells, PrestoreCell.Stop) !== 0) return { type: 'stopped' };
    return run(store, m.files);
  } catch (e) {
    if (e instanceof LayerFsError && e.code === 'ERR_ABORTED') return { type: 'stopped' };
    return { type: 'failed', message: (e as Error)?.message ?? String(e) };
  }
}

function open(): Store | null {
  try {
    const s = Store.open(data.storePath, { cacheKiB: PRESTORE_CACHE_KIB, mapStreams: false, pageCacheBytes: PAGE_CACHE_BYTES });
    if (data.checkpoints) s.checkpointInBackground(undefined, data.checkpoints);
    return s;
  } catch (e) {
    data.results.postMessage({ type: 'failed', message: `the prestore thread could not open the Store: ${(e as Error)?.message ?? String(e)}` } satisfies FromPrestore);
    return null;
  }
}

lowerPriority();
const store = open();
Atomics.store(cells, PrestoreCell.Ready, store ? 1 : 2);
if (!store) {
  data.results.close();
  parentPort!.close();
} else parentPort!.on('message', (m: ToPrestore) => {
  if (m.type === 'close') {
    store.close();
    data.results.close();
    parentPort!.close();
    Atomics.store(cells, PrestoreCell.Ready, 3);
    Atomics.notify(cells, PrestoreCell.Ready);
    return;
  }
  data.results.postMessage(answer(store, m));
  Atomics.store(cells, PrestoreCell.Busy, 0);
  Atomics.notify(cells, PrestoreCell.Busy);
});
