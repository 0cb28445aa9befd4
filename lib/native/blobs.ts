/**
 * Blobs read straight into a caller's buffer (native/napi_blobs.cc). The addon is also a SQLite
 * loadable extension: loaded into a connection (lib/store does, for its pack rows) it registers
 * that connection, and blobRead then reads a stretch of one blob through SQLite's incremental
 * blob I/O of that very connection (its transaction, its locks) into the caller's buffer,
 * without SQLite assembling the value or a Buffer made per read. The addon knows no schema: the
 * caller names the table and column.
 */
import { LayerFsError } from '../errors.js';
import { native } from './binding.js';

/** The extension's entry point in the addon's file. */
export const BLOB_ENTRY = 'sqlite3_layerfsblobs_init';

/** The SQL function that answers a registered connection's handle: `SELECT layerfs_blob_handle()`. */
export const BLOB_HANDLE_SQL = 'SELECT layerfs_blob_handle()';

/** The addon's file, to give a connection's loadExtension ('' where it cannot be found). */
export const ADDON_PATH: string = native.addonPath;

/** What blobRead answers instead of a blob's size. */
export enum BlobRead {
  /** No row with that rowid (or no blob in it). */
  NoRow = -1,
  /** The range is not inside the blob; nothing was copied. */
  Outside = -2,
  /** The connection was closed, or never registered. */
  NoHandle = -3,
}

/**
 * Copies bytes [offset, offset + length) of `column` of row `rowid` of `table` into `out` at
 * `outOffset` through the connection registered as `handle`, on the calling thread (the
 * connection's own), and returns the blob's size, or a BlobRead value. A SQLite error throws
 * ERR_NATIVE_IO (SQLite's code in `details.sqliteCode`).
 */
export function blobRead(handle: number, table: string, column: string, rowid: number, offset: number, length: number, out: Uint8Array, outOffset: number): number {
  try {
    return native.blobRead(handle, table, column, rowid, offset, length, out, outOffset);
  } catch (e) {
    const code = (e as { sqliteCode?: number }).sqliteCode;
    if (code === undefined) throw e;
    throw new LayerFsError('ERR_NATIVE_IO', (e as Error).message, { sqliteCode: code, table, column, rowid, cause: e });
  }
}
