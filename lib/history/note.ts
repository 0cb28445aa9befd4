/**
 * A Commit's note: its message, free-form JSON metadata (agent, tool call id, model…), author and
 * time. Like git's, they are part of the Commit and of its id, so a history cannot be re-labelled
 * after the fact without every later id changing.
 */
import { LayerFsError } from '../errors.js';
import { commitId, commitIdV2 } from './ids.js';

export interface CommitNote {
  message: string;
  /** A JSON object, or null for none. */
  metadata: Record<string, unknown> | null;
  author: string;
}

/** What a caller may give; everything is optional. */
export interface CommitNoteInput {
  message?: string;
  metadata?: Record<string, unknown> | null;
  author?: string;
}

/** Bounds that keep a history row small enough to list thousands at once. */
export const MAX_MESSAGE_BYTES = 64 * 1024;
export const MAX_METADATA_BYTES = 64 * 1024;
export const MAX_AUTHOR_BYTES = 1024;

function invalid(message: string, field: string, hint: string): LayerFsError {
  return new LayerFsError('ERR_INVALID_ARGUMENT', message, { field, hint });
}

function checkText(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string') throw invalid(`the Commit ${field} must be a string`, field, `give the ${field} as text`);
  if (value.includes('\0')) throw invalid(`the Commit ${field} contains a NUL character`, field, 'remove the NUL');
  if (Buffer.byteLength(value) > max) throw invalid(`the Commit ${field} is longer than ${max} bytes`, field, `shorten the ${field}`);
  return value;
}

/**
 * JSON with object keys sorted at every depth: the bytes a Commit id covers, so the same metadata
 * gives the same id whatever order its keys were written in.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw invalid('Commit metadata holds a number JSON cannot represent', 'metadata', 'use finite numbers');
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') {
      throw invalid(`Commit metadata holds a ${typeof value}, which JSON cannot represent`, 'metadata', 'use JSON values only');
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
}

/** Validates a caller's note; `author` is the default when the input names none. */
export function normalizeNote(input: CommitNoteInput | undefined, author: string): CommitNote {
  const message = checkText(input?.message ?? '', 'message', MAX_MESSAGE_BYTES);
  const who = checkText(input?.author ?? author, 'author', MAX_AUTHOR_BYTES);
  const md = input?.metadata ?? null;
  if (md !== null && (typeof md !== 'object' || Array.isArray(md))) throw invalid('Commit metadata must be a JSON object', 'metadata', 'give an object such as {"tool":"bash"}');
  if (md !== null && Buffer.byteLength(canonicalJson(md)) > MAX_METADATA_BYTES) {
    throw invalid(`Commit metadata is larger than ${MAX_METADATA_BYTES} bytes`, 'metadata', 'keep large outputs out of the metadata');
  }
  return { message, metadata: md === null ? null : (JSON.parse(canonicalJson(md)) as Record<string, unknown>), author: who };
}

export const EMPTY_NOTE: CommitNote = { message: '', metadata: null, author: '' };

/** The id a Commit row must have: what verify and a fetch from a remote re-derive. */
export function expectedCommitId(c: { rootId: Buffer; parentCommitId: Buffer | null; baseLayerId: Buffer; createdMs: number; message: string; metadata: string | null; author: string; idVersion: number }): Buffer {
  if (c.idVersion === 1) return commitId(c.rootId, c.parentCommitId, c.baseLayerId);
  return commitIdV2(c.rootId, c.parentCommitId, c.baseLayerId, c.createdMs, c.author, c.message, c.metadata ?? '');
}
