/**
 * A reader thread of a kernel-backend mount (kernel-readers.ts says what it may answer and why
 * that is safe): takes READs of unchanged stored content from its ring, reads them through its
 * own Store connection (verifying every chunk, kernel-reader-content.ts), and writes the reply to
 * /dev/fuse itself; it also writes the notification batches the serving thread gives it.
 */
import { constants } from 'node:os';
import { receiveMessageOnPort, workerData } from 'node:worker_threads';
import { fdWrite, fdWritev } from '../native/fd.js';
import { Store } from '../store/index.js';
import type { StartedViews } from '../store/chunk-run.js';
import { StreamedContent } from './kernel-reader-content.js';
import { LoopTurns } from './loop-turns.js';
import { PAGE_CACHE_BYTES, READER_CACHE_KIB } from './budget.js';
import { GONE, HEAD, KIND_NOTIFY, RING, SERVING, SLOT_BYTES, SLOT_F64, STATE, STOP, TAIL, type ReaderData } from './kernel-readers.js';
import { MAX_WRITE, OUT_HDR, writeHeader } from './kernel-wire.js';

const E = constants.errno;
const data = workerData as ReaderData;
const ctl = new Int32Array(data.ctl);
const f64 = new Float64Array(data.slots);
const bytes = new Uint8Array(data.slots);
const out = Buffer.allocUnsafeSlow(OUT_HDR + MAX_WRITE);

/** Views one writev takes besides the header; a READ in more pieces is gathered into `out`. */
const MAX_VIEWS = 63;

/** A READ taken from the ring: its rows read and their decoding started, or the error to answer. */
interface Pending {
  unique: number;
  fd: number;
  n: number;
  lane: 0 | 1;
  started: StartedViews | null;
  failed: boolean;
}

function startRead(content: StreamedContent, at: number, lane: 0 | 1): Pending {
  const unique = f64[at]!;
  const offset = f64[at + 1]!;
  const size = Math.min(f64[at + 2]!, MAX_WRITE);
  const total = f64[at + 3]!;
  const fd = f64[at + 4]!;
  const id = Buffer.from(bytes.subarray((at + SLOT_F64) * 8, (at + SLOT_F64) * 8 + 32));
  const n = offset >= total ? 0 : Math.min(size, total - offset);
  try {
    return { unique, fd, n, lane, started: content.start(id, offset, n, lane), failed: false };
  } catch {
    return { unique, fd, n, lane, started: null, failed: true };
  }
}

function answerRead(content: StreamedContent, p: Pending): void {
  let views: Buffer[] = [];
  let len = OUT_HDR;
  try {
    if (p.failed) throw new Error('EIO');
    views = content.finish(p.started);
    len += p.n;
    writeHeader(out, p.unique, len);
  } catch {
    // Damaged content answers EIO, as the serving thread would (verify says more).
    views = [];
    len = OUT_HDR;
    writeHeader(out, p.unique, OUT_HDR, -E.EIO);
  }
  // The reply straight from the verified bytes where they lie (one writev), or gathered.
  // ENOENT: the request was interrupted; ENODEV: the connection is gone. Nothing to do either way.
  if (views.length === 0) fdWrite(p.fd, out, OUT_HDR);
  else if (views.length <= MAX_VIEWS) fdWritev(p.fd, [out.subarray(0, OUT_HDR), ...views]);
  else {
    let o = OUT_HDR;
    for (const v of views) o += v.copy(out, o);
    fdWrite(p.fd, out, len);
  }
}

function sendNotes(at: number): void {
  const fd = f64[at + 4]!;
  const m = receiveMessageOnPort(data.notes)?.message as Uint8Array[] | undefined;
  // Each is answered by the kernel at once; ENOENT means it holds no such inode or name.
  for (const b of m ?? []) fdWrite(fd, b, b.length);
}

/** Where slot `i` of the ring starts, in Float64 fields. */
const slotAt = (i: number) => ((i & (RING - 1)) * SLOT_BYTES) / 8;

/**
 * Answers the ring's requests in order. A READ is started (its rows read, their decoding and
 * verification handed to the addon's pool) and, when the next request is a READ too, that one is
 * started before the first is finished and answered: this thread reads the next rows while the
 * pool verifies the current ones, instead of waiting for it (the kernel's readahead sends several
 * READs at once).
 */
async function serve(store: Store): Promise<void> {
  const content = new StreamedContent(store);
  const turns = new LoopTurns();
  Atomics.store(ctl, STATE, SERVING);
  let next: Pending | null = null;
  for (;;) {
    const head = Atomics.load(ctl, HEAD);
    const tail = Atomics.load(ctl, TAIL);
    if (head === tail) {
      if (Atomics.load(ctl, STOP)) return;
      // Before sleeping: the finalizers of the runs this thread started free their native state.
      if (turns.idleDue()) await turns.turn();
      else Atomics.wait(ctl, TAIL, tail, 1000);
      continue;
    }
    const at = slotAt(head);
    if (f64[at + 5] === KIND_NOTIFY) sendNotes(at);
    else {
      const cur: Pending = next ?? startRead(content, at, 0);
      next = null;
      const ahead = slotAt(head + 1);
      if (((tail - head) | 0) > 1 && f64[ahead + 5] !== KIND_NOTIFY) next = startRead(content, ahead, cur.lane === 0 ? 1 : 0);
      answerRead(content, cur);
    }
    Atomics.store(ctl, HEAD, (head + 1) | 0);
    Atomics.notify(ctl, HEAD);
    // A long stretch of READs gives the loop a turn too; the one started ahead stays started.
    if (turns.count()) await turns.turn();
  }
}

let store: Store | null = null;
try {
  store = Store.open(data.storePath, { cacheKiB: READER_CACHE_KIB, mapStreams: false, pageCacheBytes: PAGE_CACHE_BYTES });
  await serve(store);
} finally {
  // Gone: the serving thread answers every READ itself from now on.
  Atomics.store(ctl, STATE, GONE);
  Atomics.notify(ctl, HEAD);
  store?.close();
}
