/**
 * POSIX errors of the overlay. Overlay operations throw FsError with a positive errno from
 * os.constants.errno; the FUSE layer answers with its negation (the FUSE reply's convention).
 */
import { constants } from 'node:os';
import { LayerFsError } from '../errors.js';

export const E = constants.errno;

export type ErrnoName = keyof typeof constants.errno;

/** An errno answer. Thrown on hot paths (ENOENT lookups, ENODATA xattrs), so it carries no stack. */
export class FsError extends Error {
  readonly errno: number;

  constructor(
    readonly code: ErrnoName,
    message?: string,
  ) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message ?? code);
    Error.stackTraceLimit = limit;
    this.name = 'FsError';
    this.errno = E[code];
  }
}

export function fail(code: ErrnoName, message?: string): never {
  throw new FsError(code, message);
}

/** The negative errno a FUSE reply carries for any thrown value. */
export function negErrno(e: unknown): number {
  if (e instanceof FsError) return -e.errno;
  if (e instanceof LayerFsError) {
    switch (e.code) {
      case 'ERR_NOT_FOUND':
        return -E.ENOENT;
      case 'ERR_NO_SPACE':
        return -E.ENOSPC;
      case 'ERR_READ_ONLY':
        return -E.EROFS;
      case 'ERR_BUSY':
        return -E.EBUSY;
      default:
        return -E.EIO;
    }
  }
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (typeof code === 'string' && code in E) return -E[code as ErrnoName];
  return -E.EIO;
}
