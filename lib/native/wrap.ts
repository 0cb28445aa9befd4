/** Turns whatever the addon throws into a LayerFsError with a stable code. */
import { LayerFsError, type ErrorDetails } from '../errors.js';

export function fromNative(e: unknown, details: ErrorDetails = {}): LayerFsError {
  if (e instanceof LayerFsError) return e;
  const err = e as { message?: unknown; errno?: unknown; syscall?: unknown };
  const message = typeof err?.message === 'string' ? err.message : String(e);
  if (typeof err?.errno === 'string') {
    return new LayerFsError('ERR_NATIVE_IO', message, { ...details, errno: err.errno, syscall: err.syscall, cause: e });
  }
  // Arguments are validated before they reach the addon, so its own Type/RangeErrors mean a
  // shape we did not anticipate: still the caller's argument.
  if (e instanceof TypeError || e instanceof RangeError) {
    return new LayerFsError('ERR_INVALID_ARGUMENT', message, { ...details, cause: e });
  }
  return new LayerFsError('ERR_NATIVE', message, { ...details, cause: e });
}

export function callNative<T>(fn: () => T, details?: ErrorDetails): T {
  try {
    return fn();
  } catch (e) {
    throw fromNative(e, details);
  }
}
