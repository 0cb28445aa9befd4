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

/**
 * Rows of a binary COPY stream as they arrive, for reads too large to hold whole (a clone's
 * pack rows): chunks are joined only once the row they end is complete, so each row is copied
 * about once and the server keeps sending while earlier rows are processed.
 */
export class CopyRowReader {
  private chunks: Buffer[] = [];
  private have = 0;
  /** Bytes the next parse needs at least (the header, then each row as far as it is known). */
  private need = 19;
  private started = false;
  private ended = false;

  constructor(private readonly remote: string) {}

  /** Adds a chunk; returns the rows it completed. */
  push(chunk: Buffer): (Buffer | null)[][] {
    this.chunks.push(chunk);
    this.have += chunk.length;
    if (this.have < this.need || this.ended) return [];
    const buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.have);
    const rows: (Buffer | null)[][] = [];
    let at = 0;
    if (!this.started) {
      if (!buf.subarray(0, 11).equals(SIGNATURE)) throw truncated(this.remote);
      at = 15;
      at += 4 + buf.readUInt32BE(at);
      this.started = true;
    }
    for (;;) {
      const r = parseRow(buf, at);
      if (r.row === undefined) {
        this.need = r.need - at;
        break;
      }
      at = r.next;
      if (r.row === null) {
        this.ended = true;
        break;
      }
      rows.push(r.row);
    }
    const rest = buf.subarray(at);
    this.chunks = rest.length ? [rest] : [];
    this.have = rest.length;
    return rows;
  }

  /** Throws unless the stream ended where a COPY ends. */
  end(): void {
    if (!this.ended) throw truncated(this.remote);
  }
}

/** One row at `at`: the row (null at the end marker) and where the next starts, or how many bytes from the start of `buf` it needs. */
function parseRow(buf: Buffer, at: number): { row: (Buffer | null)[] | null; next: number } | { row: undefined; need: number } {
  if (at + 2 > buf.length) return { row: undefined, need: at + 2 };
  const n = buf.readInt16BE(at);
  let p = at + 2;
  if (n === -1) return { row: null, next: p };
  const row: (Buffer | null)[] = [];
  for (let i = 0; i < n; i++) {
    if (p + 4 > buf.length) return { row: undefined, need: p + 4 };
    const len = buf.readInt32BE(p);
    p += 4;
    if (len === -1) {
      row.push(null);
      continue;
    }
    if (p + len > buf.length) return { row: undefined, need: p + len };
    row.push(buf.subarray(p, p + len));
    p += len;
  }
  return { row, next: p };
}
