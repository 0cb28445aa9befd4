import { LayerFsError } from '../errors.js';

export function toHex(id: Uint8Array): string {
  return Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString('hex');
}

/** A full or partial id typed by a user: lowercase hex, at least 4 digits. */
export function parseHexPrefix(text: string, what: string): string {
  const t = text.trim().toLowerCase();
  if (!/^[0-9a-f]{4,64}$/.test(t)) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `${what} ${JSON.stringify(text)} is not a hex id or id prefix`, {
      hint: 'give at least 4 hex digits of the id',
    });
  }
  return t;
}
