/**
 * One connection to a remote (a pg Client) and the mapping of everything PostgreSQL or the
 * network can answer to the product's typed errors: no raw pg error escapes lib/remote.
 */
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { LayerFsError } from '../errors.js';
import type { FrameCipher } from './frame-cipher.js';
import { CopyRowReader } from './copy-binary.js';
import { clientConfig, displayUrl } from './url.js';

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOENT', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'EPIPE']);

/** Maps a pg or socket failure to a LayerFsError naming the remote. */
export function mapPgError(e: unknown, remote: string): unknown {
  if (e instanceof LayerFsError) return e;
  const err = e as { code?: string; message?: string } | null;
  const code = err?.code ?? '';
  const message = err?.message ?? String(e);
  const details = { remote, cause: e };
  if (UNREACHABLE.has(code) || /timeout|Connection terminated|connect ECONNREFUSED/i.test(message) && !/^\d/.test(code)) {
    return new LayerFsError('ERR_REMOTE_UNREACHABLE', `the remote ${remote} cannot be reached: ${message}`, { ...details, hint: 'check the host, port or socket directory and that PostgreSQL is running; nothing was changed' });
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL/.test(code) || /does not support SSL|certificate/i.test(message)) {
    return new LayerFsError('ERR_REMOTE_AUTH', `the remote ${remote}: TLS failed: ${message}`, { ...details, hint: 'check sslmode and sslrootcert in the URL (or PGSSLMODE), and the server certificate' });
  }
  if (code === '28P01' || code === '28000') {
    return new LayerFsError('ERR_REMOTE_AUTH', `the remote ${remote} refused the credentials: ${message}`, { ...details, hint: 'check the user, and the password in PGPASSWORD or ~/.pgpass' });
  }
  if (code === '3D000') {
    return new LayerFsError('ERR_REMOTE_UNREACHABLE', `the remote ${remote} has no such database: ${message}`, { ...details, hint: 'create the database (createdb), then run `layerfs remote init`' });
  }
  if (code === '53100' || code === '53200') {
    return new LayerFsError('ERR_NO_SPACE', `the remote ${remote} is out of space: ${message}`, { ...details, hint: 'free space on the PostgreSQL server and push again; what was sent so far is kept and not resent' });
  }
  if (code === '42P01' || code === '3F000') {
    return new LayerFsError('ERR_REMOTE_SCHEMA', `the remote ${remote} has no layerfs schema`, { ...details, hint: 'run `layerfs remote init REMOTE` once' });
  }
  if (code === '42501') {
    return new LayerFsError('ERR_REMOTE_AUTH', `the remote ${remote} denied access: ${message}`, { ...details, hint: 'grant the user rights on schema layerfs' });
  }
  if (/^[0-9A-Z]{5}$/.test(code)) return new LayerFsError('ERR_REMOTE', `the remote ${remote} failed: ${message} (SQLSTATE ${code})`, details);
  return e;
}

export class RemoteConnection {
  /** Seals and opens frames when the remote is encrypted (set once its key is checked). */
  cipher: FrameCipher | null = null;

  private constructor(
    private readonly client: pg.Client,
    readonly name: string,
  ) {}

  /** Connects; an unreachable server or bad credentials are typed errors. */
  static async open(name: string, url: string, password?: string): Promise<RemoteConnection> {
    const client = new pg.Client(clientConfig(url, password) as pg.ClientConfig);
    // A connection that drops later surfaces on the query that uses it; this keeps the event
    // from being an uncaught error meanwhile.
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (e) {
      await client.end().catch(() => {});
      const where = `${name} (${displayUrl(url)})`;
      const mapped = mapPgError(e, where);
      // Whatever else stops a connection from opening still names the remote, typed.
      if (mapped instanceof LayerFsError) throw mapped;
      throw new LayerFsError('ERR_REMOTE_UNREACHABLE', `cannot connect to the remote ${where}: ${(e as Error)?.message ?? String(e)}`, { remote: where, cause: e, hint: 'check the URL' });
    }
    return new RemoteConnection(client, name);
  }

  // Row types are the caller's: pg's own stay out of the published declarations.
  async query<R extends Record<string, any> = Record<string, any>>(text: string, values?: unknown[]): Promise<R[]> {
    try {
      return (await this.client.query<R>(text, values)).rows;
    } catch (e) {
      throw mapPgError(e, this.name);
    }
  }

  /** The whole output of `COPY (…) TO STDOUT (FORMAT binary)`, as the server sent it. */
  async copyOut(sql: string): Promise<Buffer> {
    const parts: Buffer[] = [];
    try {
      const stream = this.client.query(copyTo(sql));
      await pipeline(
        stream,
        new Writable({
          write(chunk: Buffer, _enc, done) {
            parts.push(chunk);
            done();
          },
        }),
      );
    } catch (e) {
      throw mapPgError(e, this.name);
    }
    return Buffer.concat(parts);
  }

  /**
   * The rows of `COPY (…) TO STDOUT (FORMAT binary)` as they arrive; the next chunk is read
   * only when the consumer asks for more rows, so a slow consumer slows the server (the
   * socket's backpressure) rather than filling memory. Stopping early ends the stream.
   */
  async *copyRows(sql: string): AsyncGenerator<(Buffer | null)[]> {
    const reader = new CopyRowReader(this.name);
    try {
      const stream = this.client.query(copyTo(sql));
      for await (const chunk of stream as AsyncIterable<Buffer>) yield* reader.push(chunk);
      reader.end();
    } catch (e) {
      throw mapPgError(e, this.name);
    }
  }

  /** Runs `fn` in one transaction (COMMIT, or ROLLBACK on any failure). */
  async transaction<T>(fn: () => Promise<T>, isolation = 'READ COMMITTED'): Promise<T> {
    await this.query(`BEGIN ISOLATION LEVEL ${isolation}`);
    try {
      const r = await fn();
      await this.query('COMMIT');
      return r;
    } catch (e) {
      await this.client.query('ROLLBACK').catch(() => {});
      throw e;
    }
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => {});
  }
}
