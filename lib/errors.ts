/**
 * Typed errors shared by every layer. A caller branches on `code`, which is stable across
 * releases; `message` is for people and may change. Leaf module: imports nothing of ours.
 */

export type ErrorCode =
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_INVALID_NAME'
  | 'ERR_NATIVE_IO'
  | 'ERR_NATIVE'
  | 'ERR_FILE_CHANGED'
  | 'ERR_CORRUPT'
  | 'ERR_NOT_FOUND'
  | 'ERR_AMBIGUOUS_ID'
  | 'ERR_NAME_TAKEN'
  | 'ERR_EXISTS'
  | 'ERR_NOT_A_STORE'
  | 'ERR_UNSUPPORTED_FORMAT'
  | 'ERR_STORE_INSIDE_SOURCE'
  | 'ERR_NOT_A_DIRECTORY'
  | 'ERR_NOT_EMPTY'
  | 'ERR_READ_ONLY'
  | 'ERR_NO_SPACE'
  | 'ERR_BUSY'
  | 'ERR_UNSAFE_PATH'
  | 'ERR_NO_CONTEXT'
  | 'ERR_DIRTY'
  | 'ERR_SANDBOX_UNAVAILABLE'
  /** The command line itself is wrong (unknown command or option, missing argument); exit code 2. */
  | 'ERR_USAGE'
  /** A remote head is no longer what this push started from (compare-and-swap lost). */
  | 'ERR_HEAD_MOVED'
  /** The remote's LayerStack or Branch of that name has another id. */
  | 'ERR_REMOTE_MISMATCH'
  | 'ERR_REMOTE_UNREACHABLE'
  | 'ERR_REMOTE_AUTH'
  /** The remote's schema is missing or of another version. */
  | 'ERR_REMOTE_SCHEMA'
  /** An encrypted remote without its key, a wrong key, or a key for a remote that is not encrypted. */
  | 'ERR_REMOTE_KEY'
  /** Any other failure reported by the remote's server. */
  | 'ERR_REMOTE'
  | 'ERR_ABORTED'
  | 'ERR_DELETED'
  | 'ERR_PRUNED';

export interface ErrorDetails {
  /** The offending file system path, when there is one. */
  path?: string;
  /** What the user can do about it. */
  hint?: string;
  /** errno name (ENOENT, EACCES, …) for I/O failures. */
  errno?: string;
  /** The object, Layer, Commit or Branch id involved, as hex. */
  id?: string;
  cause?: unknown;
  [key: string]: unknown;
}

export class LayerFsError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}) {
    super(details.hint ? `${message} (${details.hint})` : message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'LayerFsError';
    this.code = code;
    this.details = details;
  }

  get path(): string | undefined {
    return this.details.path;
  }

  toJSON(): Record<string, unknown> {
    const { cause: _cause, ...rest } = this.details;
    return { code: this.code, message: this.message, ...rest };
  }
}

export function isLayerFsError(e: unknown, code?: ErrorCode): e is LayerFsError {
  return e instanceof LayerFsError && (code === undefined || e.code === code);
}

export function invalidArgument(message: string, details: ErrorDetails = {}): LayerFsError {
  return new LayerFsError('ERR_INVALID_ARGUMENT', message, details);
}
