/**
 * The mount daemon's memory budget: its resident set stays at most 256 MiB while it serves
 * (cold reads of large files, many files written, large commits). What each part may hold:
 *   - the JavaScript heaps: one per thread (main, a serving thread per mount and a spare one,
 *     reader threads, the checkpointer), each young generation capped at YOUNG_MIB semi-spaces
 *     (V8's default lets each grow to 16 MiB while a thread copies through Buffers), and each old
 *     generation let grow HEAP_GROWING_PERCENT past what its last full collection kept;
 *   - SQLite's page cache per connection: READER_CACHE_KIB for reader threads (enough for the
 *     objects index their lookups walk; each pack row passes through once), SERVING_CACHE_KIB for
 *     serving threads and the daemon's own connection; each handle's decoded tree pages,
 *     PAGE_CACHE_BYTES;
 *   - the idle serving thread kept for the next mount, ended while a large commit runs
 *     (SPARE_YIELD_MIB, SPARE_YIELD_RECORDS);
 *   - the serving thread's chunk cache (content.ts ContentCache): CHUNK_CACHE_BYTES;
 *   - in-memory spools of small written files (spool.ts): spoolMemoryBudget(), 4 MiB per mount;
 *   - the write-behind queue (napi_write_behind.cc): 32 MiB per daemon;
 *   - requests held during a commit (kernel-worker.ts): HELD_REQUESTS request buffers per mount;
 *   - glibc's heap: blocks of MMAP_THRESHOLD bytes or more are mapped and unmapped (row, slot and
 *     write buffers go back to the system when freed; 2 MiB while a large file streams into the
 *     Store, lib/native mallocStreamHeap), at most ARENA_MAX arenas.
 * docs/BENCHMARKS.md, "The mount daemon's memory", has the measured resident sets.
 * Not bounded yet: the overlay's state per inode a change set touches (a node, its content state
 * and its name edits, kept until the commit: an rsync of the real tree's next release rewrites
 * nearly every file, so few nodes are clean enough for trim() to let go) and what a commit of
 * such a change set adds (the namespace editor's pages and records, the object writer's rows;
 * what it stored per file is packed, stored-contents.ts); nor glibc's arenas in a commit of many
 * small files, which grow in its first second from small blocks not yet traced. docs/BENCHMARKS.md
 * has the figures ("FUSE overlay memory per inode on a whole-tree change", "The mount daemon's
 * memory during a commit of many small files", "The mount daemon's per-file state during a
 * whole-tree commit").
 */
import { mallocTune } from '../native/info.js';

/** V8's semi-space size for every thread of the daemon, MiB (the `--max-semi-space-size` flag). */
export const YOUNG_MIB = 1;

/**
 * How far V8 lets each heap's old generation grow past what its last full collection kept,
 * percent (the `--heap-growing-percent` flag). V8's own choice (up to 4×) let the serving
 * thread's heap reach twice its live objects after a whole-tree rsync, most of it garbage
 * awaiting the next full collection (docs/DECISIONS.md, "A command's heap grows by 40 % between
 * full collections").
 */
export const HEAP_GROWING_PERCENT = 40;

/**
 * SQLite page cache of a reader thread's connection, KiB. Its pack rows' overflow pages pass
 * through the cache once; what it must keep are the objects table's index pages, which every
 * READ's locator lookups walk: at 2 MiB the rows pushed them out and each lookup read them again
 * (docs/DECISIONS.md, "A reader thread's SQLite cache holds the objects index").
 */
export const READER_CACHE_KIB = 8192;

/** SQLite page cache of a serving thread's connection and of the daemon's, KiB. */
export const SERVING_CACHE_KIB = 4096;

/**
 * Heap each of the daemon's Store handles may give its decoded tree pages (OpenOptions
 * pageCacheBytes; 12 MiB elsewhere). A whole-tree commit's inode-table update reads each page
 * once and filled the larger cache at the commit's end: the daemon peaked 10–15 MiB lower with
 * this one, and its commit took no longer (docs/BENCHMARKS.md, "The mount daemon's decoded
 * pages and idle threads at a whole-tree commit").
 */
export const PAGE_CACHE_BYTES = 4 * 1024 * 1024;

/**
 * A commit of at least SPARE_YIELD_RECORDS changed records that starts while the daemon's
 * resident set is above SPARE_YIELD_MIB ends the idle serving threads kept for the next mount
 * (kernel-spare.ts) and starts none until it is over: each holds its own heap with the whole
 * module graph loaded, 16–18 MiB of the daemon (docs/BENCHMARKS.md, "The mount daemon's decoded
 * pages and idle threads at a whole-tree commit"), and such a commit adds tens of MiB. Other
 * commits keep them: restarting one costs a few hundred ms of CPU, which small commits would
 * pay each time in a daemon that serves many Workspaces (and so is large without any large
 * change).
 */
export const SPARE_YIELD_MIB = 160;
export const SPARE_YIELD_RECORDS = 10_000;

/** Verified chunks the serving thread keeps (it answers READs only until a reader is ready). */
export const CHUNK_CACHE_BYTES = 4 * 1024 * 1024;

/**
 * Requests that would change the overlay, read between the steps of a commit and held in their
 * request buffers (up to 1 MiB each: a WRITE's payload) until it ends. With this many held the
 * serving thread reads nothing more until the commit's end; the rest wait in the kernel's queue.
 */
export const HELD_REQUESTS = 16;

/**
 * A commit that ran at least this long, ms, is followed by full collections of the serving
 * thread's heap and a trim of glibc's (loop-turns.ts settle): 117–136 ms after a whole-tree
 * commit of 11–13 s, and without them the idle daemon kept what the commit left
 * (docs/BENCHMARKS.md, "What a whole-tree commit leaves in the idle daemon").
 */
export const SETTLE_AFTER_MS = 1000;

/**
 * A mount whose serving thread answered at least SETTLE_BURST_REQUESTS requests since it last
 * settled, and none for SETTLE_QUIET_MS ms, settles too (quiet-settle.ts): an idle daemon does
 * not keep what a large uncommitted change left. A settle takes the serving thread ~70–200 ms,
 * so a trickle of requests never causes one, and a burst's first request after a quiet spell
 * waits for one at most.
 */
export const SETTLE_QUIET_MS = 2000;
export const SETTLE_BURST_REQUESTS = 8192;

/** glibc's mmap threshold in the daemon, bytes (native mallocTune). */
export const MMAP_THRESHOLD = 256 * 1024;

/** glibc malloc arenas the daemon's threads share. */
export const ARENA_MAX = 4;

/**
 * Applies the glibc part of the budget to this process: blocks of MMAP_THRESHOLD bytes or more
 * are mapped and unmapped, so a freed row, frame or job buffer goes back to the system at once
 * (instead of the threshold rising to the largest block freed so far and such blocks filling
 * the heap), and the threads share at most ARENA_MAX arenas. Call before the process's threads
 * start; true when glibc took both settings (false elsewhere).
 */
export function applyGlibcBudget(): boolean {
  return mallocTune(MMAP_THRESHOLD, ARENA_MAX);
}

/**
 * Storing changed files ahead of the commit (prestore.ts): a job is made once PRESTORE_MIN_FILES
 * files were released PRESTORE_QUIET_MS ago or more (so a tool call's few files never start the
 * thread), of at most PRESTORE_JOB_FILES files and PRESTORE_JOB_BYTES bytes (a larger file goes
 * alone); files over PRESTORE_FILE_BYTES are left to the commit, since a job holds the Store's
 * write lock while it runs. Its thread's connection has PRESTORE_CACHE_KIB of SQLite cache.
 */
export const PRESTORE_QUIET_MS = 50;
export const PRESTORE_MIN_FILES = 32;
export const PRESTORE_JOB_FILES = 256;
export const PRESTORE_JOB_BYTES = 8 * 1024 * 1024;
export const PRESTORE_FILE_BYTES = 32 * 1024 * 1024;
export const PRESTORE_CACHE_KIB = 2048;
/** A prestore thread without a job for this long (ms) ends: its heap and connection, ~40 MiB, go back. */
export const PRESTORE_IDLE_END_MS = 2000;
