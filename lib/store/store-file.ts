/**
 * Opening, creating and closing a Store file. Only lib/store touches SQLite.
 */
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, mkdirSync, fstatSync, linkSync, openSync, readSync, realpathSync, statSync, unlinkSync, existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { LayerFsError } from '../errors.js';
import { APPLICATION_ID, BASE_FORMAT_VERSION, FORMAT_VERSION, OLDEST_FORMAT_VERSION, PAGE_SIZE, readShimOf, SCHEMA, UPGRADE_STEPS } from './schema.js';
import { mapSqliteError } from './sqlite-errors.js';

export type Db = Database.Database;

/**
 * What callers use of a statement from `prepared`: better-sqlite3's own, named here so that the
 * published declarations do not name that package's types.
 */
export interface PreparedStatement {
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
}

const statements = new WeakMap<Db, Map<string, Database.Statement>>();

/**
 * `sql` prepared once per connection (and per `mode`) and kept: a commit's many short statements
 * cost a preparation each time otherwise (preparing was about a third of a small commit's CPU in
 * a profile of 20 ten-file commits on a 1,000-file tree). Each mode has its own statement, set
 * once, so a caller may keep what it gets. Only for get, all and run (an iterate() in progress
 * would make the one statement busy).
 */
export function prepared(db: Db, sql: string, mode?: 'pluck' | 'raw'): PreparedStatement {
  let m = statements.get(db);
  if (!m) statements.set(db, (m = new Map()));
  const key = mode ? `${mode}\0${sql}` : sql;
  let s = m.get(key);
  if (!s) {
    s = db.prepare(sql);
    if (mode === 'pluck') s.pluck();
    else if (mode === 'raw') s.raw();
    m.set(key, s);
  }
  return s;
}

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');

export interface StoreInfo {
  path: string;
  formatVersion: number;
  storeId: string;
  createdMs: number;
}

/** What the WAL file is cut back to when the log starts over (bytes): two automatic checkpoints' worth. */
export const WAL_SIZE_LIMIT = 16 * 1024 * 1024;

function applyPragmas(db: Db): void {
  // WAL + NORMAL: a crash can lose the last transactions but never corrupts the file or
  // exposes a half-written one; readers never block the writer.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 30000');
  db.pragma('cache_size = -16384');
  db.pragma('temp_store = MEMORY');
  // The WAL file only grows: a commit appends past its end whenever the log could not start
  // over (a reader was in it). When it does start over, the first commit cuts it back to this.
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
}

/**
 * Creates a new Store at `path`. The file appears complete or not at all: the schema is written
 * to a private temporary file that is then hard-linked into place, which also refuses an
 * existing path atomically (two concurrent creates: exactly one wins).
 */
export function createStoreFile(path: string): StoreInfo {
  const abs = resolve(path);
  if (existsSync(abs)) {
    throw new LayerFsError('ERR_EXISTS', `refusing to create a Store over an existing path`, { path: abs, hint: 'choose a new path, or use db connect' });
  }
  const dir = dirname(abs);
  // Like `git init`, a new Store makes its directory (0700: the Store holds every state).
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR') throw new LayerFsError('ERR_NOT_A_DIRECTORY', `the Store's directory is not a directory`, { path: dir, hint: 'choose a path in a directory' });
    throw new LayerFsError('ERR_NATIVE_IO', `cannot create the Store's directory: ${(e as Error).message}`, { path: dir, errno: code });
  }
  if (!statSync(dir).isDirectory()) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `the Store's directory is not a directory`, { path: dir, hint: 'choose a path in a directory' });
  const tmp = join(dir, `.${basename(abs)}.creating-${process.pid}-${randomBytes(4).toString('hex')}`);
  // Create the file ourselves first so that it is 0600 from its first byte.
  closeSync(openSync(tmp, 'wx', 0o600));
  const storeId = randomBytes(16).toString('hex');
  const createdMs = Date.now();
  try {
    const db = new Database(tmp);
    try {
      db.pragma(`page_size = ${PAGE_SIZE}`);
      applyPragmas(db);
      db.exec(SCHEMA);
      applySteps(db, BASE_FORMAT_VERSION);
      db.prepare('INSERT INTO meta (key, value) VALUES (?, ?), (?, ?)').run('store_id', storeId, 'created_ms', String(createdMs));
      db.pragma(`application_id = ${APPLICATION_ID}`);
      db.pragma(`user_version = ${FORMAT_VERSION}`);
      db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
    try {
      linkSync(tmp, abs);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new LayerFsError('ERR_EXISTS', `refusing to create a Store over an existing path`, { path: abs, hint: 'choose a new path, or use db connect' });
      }
      throw e;
    }
  } catch (e) {
    throw mapSqliteError(e, abs);
  } finally {
    for (const p of [tmp, `${tmp}-wal`, `${tmp}-shm`]) {
      try {
        unlinkSync(p);
      } catch {
        /* already gone */
      }
    }
  }
  return { path: join(realpathSync(dir), basename(abs)), formatVersion: FORMAT_VERSION, storeId, createdMs };
}

function checkHeader(abs: string): void {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; the
    // file type is checked right after. It changes nothing for regular files.
    fd = openSync(abs, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new LayerFsError('ERR_NOT_FOUND', `no Store at this path`, { path: abs, hint: 'create one with `layerfs db create PATH`' });
    throw new LayerFsError('ERR_NATIVE_IO', `cannot open the Store: ${(e as Error).message}`, { path: abs, errno: code });
  }
  try {
    if (!fstatSync(fd).isFile()) throw new LayerFsError('ERR_NOT_A_STORE', `not a LayerFS Store (not a regular file)`, { path: abs });
    const head = Buffer.alloc(100);
    let n: number;
    try {
      n = readSync(fd, head, 0, 100, 0);
    } catch (e) {
      // A "regular file" that cannot be read from its start (/proc/self/mem: EIO) is no Store.
      throw new LayerFsError('ERR_NOT_A_STORE', `not a LayerFS Store (its first bytes cannot be read: ${(e as NodeJS.ErrnoException).code})`, { path: abs, errno: (e as NodeJS.ErrnoException).code });
    }
    if (n < 100 || !head.subarray(0, 16).equals(SQLITE_MAGIC)) {
      throw new LayerFsError('ERR_NOT_A_STORE', `not a LayerFS Store (not a SQLite database)`, { path: abs });
    }
    // application_id lives at byte 68 of the SQLite header; checking it here avoids opening (and
    // possibly converting to WAL) somebody else's database.
    const appId = head.readUInt32BE(68);
    if (appId !== APPLICATION_ID) {
      throw new LayerFsError('ERR_NOT_A_STORE', `not a LayerFS Store (a SQLite database of another application)`, { path: abs });
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether a writable open of the Store at `path` would change nothing before its first write:
 * the file and its directory (SQLite's WAL and shared-memory files) are writable to this process,
 * and the header records the current format, so nothing is upgraded. A header that records an
 * older one (even with the upgrade committed in the WAL and not yet copied back) answers false.
 * For a command that only reads but may refresh a cache, as `git status` refreshes git's index.
 */
export function writableAsIs(path: string): boolean {
  try {
    const abs = realpathSync(resolve(path));
    accessSync(abs, constants.W_OK);
    accessSync(dirname(abs), constants.W_OK);
    const fd = openSync(abs, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    try {
      const head = Buffer.alloc(100);
      if (!fstatSync(fd).isFile() || readSync(fd, head, 0, 100, 0) < 100) return false;
      // user_version, where SQLite keeps the format number, is the header's 4 bytes at 60.
      return head.subarray(0, 16).equals(SQLITE_MAGIC) && head.readUInt32BE(68) === APPLICATION_ID && head.readUInt32BE(60) === FORMAT_VERSION;
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

export interface OpenOptions {
  readonly?: boolean;
  /**
   * With `readonly`: read the file's pages through a memory map (SQLite `mmap_size`, up to
   * MAPPED_BYTES) rather than a pread(2) per page: large reads cost about a fifth less CPU, but every page read
   * counts toward the process's resident memory, so only short-lived readers ask for it.
   */
  mapped?: boolean;
  /**
   * SQLite's page cache of the connection, KiB (default 16 MiB). A connection that reads large
   * rows once (a FUSE reader thread: the pack rows' overflow pages are never read again) keeps
   * its memory with a small one; the file's pages stay in the kernel's page cache either way.
   */
  cacheKiB?: number;
  /**
   * A streamed read of a large file maps the Store file while it runs (ChunkRunReader.mapStream):
   * default yes. Off for connections whose resident memory is bounded (the mount daemon's): a
   * mapped page read counts toward the resident set until the read ends.
   */
  mapStreams?: boolean;
  /**
   * Heap the handle's cache of decoded tree pages may take, bytes (default PAGE_CACHE_HEAP, 12
   * MiB; page-io.ts). The mount daemon's connections take less: its resident set is bounded, and
   * a commit's tree updates read each page once.
   */
  pageCacheBytes?: number;
}

/** Connections whose large streamed reads may map the Store file (see OpenOptions.mapStreams). */
const streamMapping = new WeakSet<Db>();

/** Whether a large streamed read on `db` may map the Store file for its duration. */
export function mapsStreams(db: Db): boolean {
  return streamMapping.has(db);
}

/** How much of a Store file a `mapped` connection maps (SQLite maps the file's first bytes up to this). */
export const MAPPED_BYTES = 1 << 30;

/** Runs every upgrade step after format `from`, in order (schema.ts UPGRADE_STEPS). */
function applySteps(db: Db, from: number): void {
  for (const step of UPGRADE_STEPS) {
    if (step.to <= from) continue;
    if (step.sql) db.exec(step.sql);
    step.migrate?.(db);
  }
}

/**
 * Older formats upgraded in place, in one write transaction, step by step; no object is
 * rewritten. A concurrent opener may have done it first.
 */
function upgrade(db: Db): number {
  db.exec('BEGIN IMMEDIATE');
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    applySteps(db, version);
    if (version < FORMAT_VERSION) db.pragma(`user_version = ${FORMAT_VERSION}`);
    db.exec('COMMIT');
  } catch (e) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw e;
  }
  return FORMAT_VERSION;
}

/** Opens an existing Store, refusing anything that is not a Store of a supported format. */
export function openStoreFile(path: string, opts: OpenOptions = {}): { db: Db; info: StoreInfo } {
  checkHeader(resolve(path));
  // One Store, one name: its real path keys `<store>.d` (receipts, executions, the daemon), so
  // a symlinked spelling reaches the same state as the real one.
  const abs = realpathSync(resolve(path));
  let db: Db | undefined;
  try {
    db = new Database(abs, { fileMustExist: true, readonly: opts.readonly ?? false });
    let version = db.pragma('user_version', { simple: true }) as number;
    if (version < OLDEST_FORMAT_VERSION || version > FORMAT_VERSION) {
      throw new LayerFsError('ERR_UNSUPPORTED_FORMAT', `Store format version ${version} is not supported (this layerfs reads versions ${OLDEST_FORMAT_VERSION} to ${FORMAT_VERSION})`, {
        path: abs,
        formatVersion: version,
        hint: version > FORMAT_VERSION ? 'upgrade layerfs to open this Store' : 'this Store was made by an older, unsupported layerfs',
      });
    }
    if (!opts.readonly) {
      applyPragmas(db);
      if (version < FORMAT_VERSION) version = upgrade(db);
    }
    if (opts.cacheKiB !== undefined) db.pragma(`cache_size = -${Math.max(64, Math.floor(opts.cacheKiB))}`);
    if ((opts.mapStreams ?? true) && !(opts.readonly && opts.mapped)) streamMapping.add(db);
    if (opts.readonly) {
      db.pragma('busy_timeout = 30000');
      if (opts.mapped) db.pragma(`mmap_size = ${MAPPED_BYTES}`);
      // An older Store read as is: TEMP shims make it read like the current format.
      for (const step of UPGRADE_STEPS) if (step.to > Math.max(version, BASE_FORMAT_VERSION)) db.exec(readShimOf(step));
    }
    const meta = new Map((db.prepare('SELECT key, value FROM meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]));
    return {
      db,
      info: { path: abs, formatVersion: version, storeId: meta.get('store_id') ?? '', createdMs: Number(meta.get('created_ms') ?? 0) },
    };
  } catch (e) {
    db?.close();
    throw mapSqliteError(e, abs);
  }
}
