/**
 * PostgreSQL's binary COPY format (COPY … TO STDOUT (FORMAT binary)), read back into rows. pg
 * reads query results as text (bytea as hex), which the server must produce and this process
 * decode; a binary COPY carries the bytes as stored. Only what the remote's reads use: bytea,
 * int4 and int8 columns, NULLs.
 */
import { LayerFsError } from '../errors.js';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

function truncated(remote: string): LayerFsError {
  return new LayerFsError('ERR_REMOTE', `the remote ${remote} sent a malformed binary COPY stream`, { hint: 'retry; nothing of it was kept' });
}

/** The rows of a binary COPY stream, each a list of fields (null for NULL). */
export function parseBinaryCopy(data: Buffer, remote: string): (Buffer | null)[][] {
  if (data.length < 19 || !data.subarray(0, 11).equals(SIGNATURE)) throw truncated(remote);
  let at = 15;
  at += 4 + data.readUInt32BE(at);
  const rows: (Buffer | null)[][] = [];
  for (;;) {
    if (at + 2 > data.length) throw truncated(remote);
    const n = data.readInt16BE(at);
    at += 2;
    if (n === -1) return rows;
    const row: (Buffer | null)[] = [];
    for (let i = 0; i < n; i++) {
      if (at + 4 > data.length) throw truncated(remote);
      const len = data.readInt32BE(at);
      at += 4;
      if (len === -1) {
        row.push(null);
        continue;
      }
      if (at + len > data.length) throw truncated(remote);
      row.push(data.subarray(at, at + len));
      at += len;
    }
    rows.push(row);
  }
}

/** An int8 field as the decimal string pg gives for int8 in text results. */
export const int8Text = (f: Buffer | null): string => (f ? f.readBigInt64BE(0).toString() : '');
export const int4 = (f: Buffer | null): number => (f ? f.readInt32BE(0) : 0);

/** An int8[] literal for COPY's query, which takes no parameters: the values are decimal integers. */
export function int8Array(values: (string | number)[]): string {
  for (const v of values) if (!/^-?\d+$/.test(String(v))) throw new LayerFsError('ERR_REMOTE', `not an integer: ${String(v)}`);
  return `'{${values.join(',')}}'::int8[]`;
}
