/**
 * Pack rows read straight into a caller's buffer (native/napi_pack_rows.cc). The addon is also a
 * SQLite loadable extension: loaded into a Store connection it registers that connection, and
 * packRead then reads a stretch of one `packs` row through SQLite's incremental blob I/O of that
 * very connection (its transaction, its locks) into the caller's buffer, without SQLite
 * assembling the row or a Buffer made per row. The bytes are stored bytes: the caller decodes
 * and verifies them like any other. lib/store/chunk-run.ts is the one user.
 */
import { native } from './binding.js';

/** The extension's entry point in the addon's file. */
export const PACK_ROWS_ENTRY = 'sqlite3_layerfspackrows_init';

/** The addon's file, to give a connection's loadExtension ('' where it cannot be found). */
export const ADDON_PATH: string = native.addonPath;

/** What packRead answers instead of a row's size. */
export enum PackRead {
  /** No row with that id. */
  NoRow = -1,
  /** The range is not inside the row; nothing was copied. */
  Outside = -2,
  /** The connection was closed, or never registered. */
  NoHandle = -3,
}

/**
 * Copies bytes [offset, offset + length) of pack row `rowid` into `out` at `outOffset` through
 * the connection registered as `handle`, on the calling thread (the connection's own), and
 * returns the row's size, or a PackRead value. A SQLite error throws (its code in `sqliteCode`).
 */
export function packRead(handle: number, rowid: number, offset: number, length: number, out: Uint8Array, outOffset: number): number {
  return native.packRead(handle, rowid, offset, length, out, outOffset);
}
