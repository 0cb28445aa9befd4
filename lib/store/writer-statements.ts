/**
 * What every ObjectWriter of a connection shares: its statements, prepared once per connection
 * (a small commit's writer lives for a few milliseconds, and four prepares were a tenth of it),
 * how much of a transaction is compressed on the writer's own thread, and the dictionary row.
 */
import { zstdCompress } from '../native/zstd.js';
import { Codec, COMPRESSION_LEVEL, KEEP_COMPRESSED } from './codec.js';
import type { Dictionary } from './dictionary.js';
import { ObjectKind } from './object-id.js';
import { mapSqliteError } from './sqlite-errors.js';
import { prepared, type Db, type PreparedStatement } from './store-file.js';

/**
 * Groups sealed while a transaction has sealed at most this many bytes are compressed on the
 * writer's thread: a commit of a small change seals a few tree groups, and handing each to the
 * addon's thread only to wait for it cost more than the compression (on a busy machine each
 * hand-over is a scheduling delay).
 */
export const INLINE_SEAL_BYTES = 256 * 1024;

export interface WriterStatements {
  exists: PreparedStatement;
  locate: PreparedStatement;
  insertPack: PreparedStatement;
  insertObject: PreparedStatement;
}

/** The writer statements of connection `db` (prepared at its first writer, then kept: `prepared`). */
export function writerStatements(db: Db): WriterStatements {
  return {
    exists: prepared(db, 'SELECT 1 FROM objects WHERE id = ?', 'pluck'),
    locate: prepared(db, 'SELECT size, codec, base FROM objects WHERE id = ?'),
    insertPack: prepared(db, 'INSERT INTO packs (data) VALUES (?)'),
    insertObject: prepared(db, 'INSERT INTO objects (id, kind, size, codec, pack, offset, length, at, base) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
  };
}

/**
 * The dictionary object in a row of its own, compressed without a dictionary (it cannot need
 * itself). Not the caller's content: its receipt does not count it.
 */
export function writeDictionaryRow(st: Pick<WriterStatements, 'insertPack' | 'insertObject'>, dict: Dictionary, path: string): void {
  const z = zstdCompress(dict.bytes, COMPRESSION_LEVEL);
  const zipped = z.length <= dict.bytes.length * KEEP_COMPRESSED;
  try {
    const pack = Number(st.insertPack.run(zipped ? z : dict.bytes).lastInsertRowid);
    st.insertObject.run(dict.id, ObjectKind.Dictionary, dict.bytes.length, zipped ? Codec.Zstd : Codec.Raw, pack, 0, zipped ? z.length : dict.bytes.length, 0, null);
  } catch (e) {
    throw mapSqliteError(e, path);
  }
}
