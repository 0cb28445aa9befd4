/**
 * Keeps the WAL of a Store that several processes commit to from growing without bound.
 *
 * The log can only start over (and be cut back to journal_size_limit, store-file.ts) when a
 * writer begins after a complete checkpoint with no reader left in the log. With several agents
 * committing to one Store some reader nearly always is, so the automatic checkpoint copies the
 * frames but the file keeps growing: 49–99 MB peaks in four-Workspace runs beside a 6 MB Store
 * (docs/BENCHMARKS.md, "Many agents: the WAL's peak bounded").
 *
 * After a small commit, a handle whose WAL file has passed WAL_BYTES_LIMIT runs a TRUNCATE
 * checkpoint that waits at most TRUNCATE_WAIT_MS for the readers still in the log (readers that
 * start meanwhile read the database file and do not hold it up). If they keep it from it, this
 * handle tries again only after RETRY_AFTER_MS, so a long reader never costs every commit the
 * wait. The mount daemon's handles leave this to their checkpointer (checkpointer.ts), which
 * does the same off the commit's path.
 */
import { statSync } from 'node:fs';
import { WAL_BYTES_LIMIT } from './checkpointer.js';
import type { Db } from './store-file.js';

/** How long the TRUNCATE checkpoint may hold the write lock waiting for readers. */
const TRUNCATE_WAIT_MS = 20;
/** After readers kept the checkpoint from truncating, commits of this handle skip it this long. */
const RETRY_AFTER_MS = 250;

export class WalBound {
  private notBefore = 0;
  /** Checkpoints that truncated the WAL, and those readers kept from it (for tests and benches). */
  readonly counts = { truncated: 0, busy: 0 };

  constructor(
    private readonly db: Db,
    private readonly walPath: string,
    private readonly limit = WAL_BYTES_LIMIT,
  ) {}

  /** Called after COMMIT, outside any transaction; never throws (the commit stands either way). */
  afterCommit(): void {
    const now = performance.now();
    if (now < this.notBefore) return;
    const size = statSync(this.walPath, { throwIfNoEntry: false })?.size ?? 0;
    if (size <= this.limit) return;
    const timeout = this.db.pragma('busy_timeout', { simple: true }) as number;
    this.db.pragma(`busy_timeout = ${TRUNCATE_WAIT_MS}`);
    try {
      const [r] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
      if (r?.busy === 0) this.counts.truncated++;
      else this.busy(now);
    } catch {
      // SQLITE_BUSY (another writer held the lock throughout) or I/O: the next try may do it.
      this.busy(now);
    } finally {
      this.db.pragma(`busy_timeout = ${timeout}`);
    }
  }

  private busy(now: number): void {
    this.counts.busy++;
    this.notBefore = now + RETRY_AFTER_MS;
  }
}
