/** Option values parsed the same way by every command that takes them; bad ones are usage errors. */
import { LayerFsError } from '../sdk/errors.js';

/** A usage mistake a command finds itself (commander finds the others). */
export function usage(message: string): LayerFsError {
  return new LayerFsError('ERR_INVALID_ARGUMENT', message);
}

/** --metadata must be a JSON object; anything else is a usage error, not a stack trace. */
export function parseMetadata(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `--metadata is not valid JSON: ${(e as Error).message}`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new LayerFsError('ERR_INVALID_ARGUMENT', '--metadata must be a JSON object, such as {"tool":"bash","callId":"c17"}');
  return v as Record<string, unknown>;
}

/** A --offset / --length value: a non-negative decimal integer. */
export function byteCount(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = /^\d+$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n)) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${flag} must be a non-negative integer, got ${JSON.stringify(v)}`, { argument: flag });
  return n;
}

/** A repeatable option's values, in the order given. */
export const collect = (v: string, prev: string[] = []): string[] => [...prev, v];
