import { LayerFsError } from '../errors.js';

/** Maps SQLite failures to the product's typed errors so no raw SqliteError escapes the Store. */
export function mapSqliteError(e: unknown, path: string): unknown {
  if (e instanceof LayerFsError) return e;
  const code = (e as { code?: string } | null)?.code ?? '';
  const message = (e as Error | null)?.message ?? String(e);
  if (code === 'SQLITE_FULL' || /disk is full|database or disk is full/.test(message)) {
    return new LayerFsError('ERR_NO_SPACE', `no space left for the Store`, { path, hint: 'free disk space and retry; the Store is unchanged', cause: e });
  }
  if (code.startsWith('SQLITE_READONLY')) {
    return new LayerFsError('ERR_READ_ONLY', `the Store is read-only`, { path, hint: 'check the permissions of the Store file and its directory', cause: e });
  }
  if (code === 'SQLITE_NOTADB') {
    return new LayerFsError('ERR_NOT_A_STORE', `not a LayerFS Store`, { path, cause: e });
  }
  if (code === 'SQLITE_CORRUPT' || code.startsWith('SQLITE_CORRUPT')) {
    return new LayerFsError('ERR_CORRUPT', `the Store file is damaged: ${message}`, { path, cause: e });
  }
  if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY') || code === 'SQLITE_LOCKED') {
    return new LayerFsError('ERR_BUSY', `the Store is busy`, { path, hint: 'another process holds the write lock; retry', cause: e });
  }
  // A short read means the file ends before the pages SQLite expects: a truncated Store, which
  // is damage to the file (ERR_CORRUPT), not a failing device.
  if (code === 'SQLITE_IOERR_SHORT_READ') {
    return new LayerFsError('ERR_CORRUPT', `the Store file is damaged: it is shorter than its pages (truncated?)`, { path, cause: e });
  }
  if (code === 'SQLITE_IOERR' || code.startsWith('SQLITE_IOERR')) {
    return new LayerFsError('ERR_NATIVE_IO', `I/O error on the Store: ${message}`, { path, cause: e });
  }
  return e;
}
