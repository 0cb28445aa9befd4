/**
 * The read side of a Store handle: one SQLite connection, authenticated object reads, views of
 * states and read snapshots. Store (store.ts) adds write transactions, checkpointing and
 * maintenance; a process that only reads (`layerfs cat`, `ls`: sdk/reader.ts) opens this one, so
 * it never loads the object writer, its groups, deltas and dictionary training, or the
 * checkpointer's worker (each module a command loads costs its start time).
 */
import type { Statement } from 'better-sqlite3';
import type { StoreAccess } from './access.js';
import { ChunkRunReader } from './chunk-run.js';
import { ObjectReader } from './object-reader.js';
import { PageStore } from './page-io.js';
import { mapSqliteError } from './sqlite-errors.js';
import { openStoreFile, prepared, type Db, type OpenOptions, type StoreInfo } from './store-file.js';
import type { LazyTable } from './schema.js';
import { FsView } from './tree/view.js';
import type { ObjectKind } from './object-id.js';

export class ReadStore implements StoreAccess {
  readonly objects: ObjectReader;
  readonly pages: PageStore;
  /** The LAZY_TABLES seen committed on this handle (a table, once made, is never dropped). */
  private readonly tables = new Set<LazyTable>();
  private tableLookup: Statement | undefined;
  /** The chunk-run reader of this Store's views (streamed reads of whole files). */
  protected runs: ChunkRunReader | undefined;

  protected constructor(
    readonly db: Db,
    readonly info: StoreInfo,
    pageCacheBytes?: number,
  ) {
    this.objects = new ObjectReader(db, info.path);
    this.pages = new PageStore(this.objects, pageCacheBytes);
  }

  /** Opens an existing Store for reading (`opts.readonly` as a read-only process wants it). */
  static openForReading(path: string, opts: OpenOptions = {}): ReadStore {
    const { db, info } = openStoreFile(path, opts);
    return new ReadStore(db, info, opts.pageCacheBytes);
  }

  get path(): string {
    return this.info.path;
  }

  /** Paths that belong to this Store on disk (an import must never read them). */
  get files(): string[] {
    return [this.path, `${this.path}-wal`, `${this.path}-shm`, `${this.path}-journal`];
  }

  /** Bytes of database pages in use (file size less free pages), counting the WAL's newer pages. */
  allocatedBytes(): number {
    // Prepared once per connection: a write transaction asks twice, inside the write lock.
    const pageSize = this.pragmaValue('page_size');
    const pages = this.pragmaValue('page_count');
    const free = this.pragmaValue('freelist_count');
    return (pages - free) * pageSize;
  }

  /** `PRAGMA name` (or `name = value`) through a statement prepared once per connection (db.pragma prepares each call). */
  protected pragmaValue(pragma: string): number {
    return prepared(this.db, `PRAGMA ${pragma}`, 'pluck').get() as number;
  }

  /** The objects stored (history's rows are counted by lib/history `historyCounts`). */
  counts(): { objects: number } {
    return this.db.prepare('SELECT count(*) AS objects FROM objects').get() as { objects: number };
  }

  /** How many objects of one kind are stored (a full scan of the index: for reports, not hot paths). */
  countObjects(kind: ObjectKind): number {
    return this.db.prepare('SELECT count(*) FROM objects WHERE kind = ?').pluck().get(kind) as number;
  }

  /** Whether any object is stored at all: an empty Store lacks everything (a clone into it fetches all). */
  hasObjects(): boolean {
    return this.db.prepare('SELECT 1 FROM objects LIMIT 1').get() !== undefined;
  }

  /** A reader of chunk runs on this Store's connection (a FUSE reader thread has a Store of its own). */
  chunkRuns(): ChunkRunReader {
    return new ChunkRunReader(this.db, this.objects);
  }

  view(rootId: Buffer): FsView {
    this.runs ??= this.chunkRuns();
    return new FsView(rootId, this.objects, this.pages, this.runs);
  }

  /**
   * Whether one of the tables made on first use (schema.ts LAZY_TABLES) exists: a missing one
   * reads as empty, so its owner answers without querying it. Each owner folder asks for its
   * own tables only (its helper: lib/history/tables.ts, lib/remote/remotes.ts,
   * lib/workspace/tables.ts).
   */
  hasTable(name: LazyTable): boolean {
    if (this.tables.has(name)) return true;
    this.tableLookup ??= this.db.prepare("SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = ?");
    const found = this.tableLookup.get(name) !== undefined;
    // Inside a transaction the table may be this transaction's own, gone again on a rollback.
    if (found && !this.db.inTransaction) this.tables.add(name);
    return found;
  }

  /** A consistent read snapshot across several statements. */
  read<T>(fn: () => T): T {
    if (this.db.inTransaction) {
      try {
        return fn();
      } catch (e) {
        throw mapSqliteError(e, this.path);
      }
    }
    let out: T;
    try {
      this.db.exec('BEGIN DEFERRED');
      out = fn();
    } catch (e) {
      // On a damaged file the rollback can fail too: the first error is the one to report.
      if (this.db.inTransaction) {
        try {
          this.db.exec('ROLLBACK');
        } catch {
          /* reported below */
        }
      }
      throw mapSqliteError(e, this.path);
    }
    // A damaged file can make SQLite end the transaction itself inside fn (an I/O or corruption
    // error that fn reported as a finding, e.g. verify's quick_check): nothing is left to end.
    try {
      if (this.db.inTransaction) this.db.exec('COMMIT');
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    return out;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
