/**
 * Where a remote is: a postgres:// URL (or none: the PG* environment variables, as libpq reads
 * them), never with a password in it. Passwords come from PGPASSWORD or ~/.pgpass (PGPASSFILE)
 * at connect time, so a Store file never holds one in clear text.
 */
import { parseIntoClientConfig } from 'pg-connection-string';
import pgpass from 'pgpass';
import type { ClientConfig } from 'pg';
import { LayerFsError } from '../errors.js';

/** What `remote add` stores for "use the PG* environment variables". */
export const ENV_URL = 'env:';

function parseUrl(url: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `not a PostgreSQL URL: ${JSON.stringify(url)}`, { url, hint: 'give postgres://USER@HOST[:PORT]/DATABASE, or "env:" for the PG* environment variables' });
  }
}

/** The URL without its password (and whether it had one). */
export function withoutPassword(url: string): { url: string; password: string | undefined } {
  if (url === ENV_URL) return { url, password: undefined };
  const u = parseUrl(url);
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `not a PostgreSQL URL: ${JSON.stringify(url)}`, { url, hint: 'give postgres://USER@HOST[:PORT]/DATABASE' });
  }
  if (u.searchParams.has('password')) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'a password in the URL would be stored in clear text', { hint: 'put it in ~/.pgpass or PGPASSWORD instead' });
  const password = u.password ? decodeURIComponent(u.password) : undefined;
  u.password = '';
  return { url: u.toString(), password };
}

/** A URL fit for display: never with a password. */
export function displayUrl(url: string): string {
  return url === ENV_URL ? 'PG* environment' : withoutPassword(url).url;
}

function fromPgpass(c: ClientConfig): Promise<string | undefined> {
  return new Promise((resolve) => pgpass({ host: c.host ?? process.env.PGHOST ?? 'localhost', port: c.port ?? Number(process.env.PGPORT ?? 5432), database: c.database ?? process.env.PGDATABASE, user: c.user ?? process.env.PGUSER ?? process.env.USER } as never, (p?: string) => resolve(p)));
}

/** Stands in for a missing password: the server refuses it (28P01), which maps to ERR_REMOTE_AUTH. */
export const NO_PASSWORD = '\u0000layerfs: no password';

/**
 * The pg client configuration for a stored URL. `password` (from a URL given on the command
 * line, used once and never stored) wins over PGPASSWORD, which wins over ~/.pgpass. Typed
 * loosely so that pg's types stay out of the published declarations.
 */
export function clientConfig(url: string, password?: string): object {
  const base: ClientConfig = url === ENV_URL ? {} : (parseIntoClientConfig(withoutPassword(url).url) as ClientConfig);
  delete base.password;
  const config: ClientConfig = { ...base, connectionTimeoutMillis: 10_000, application_name: 'layerfs' };
  config.password = async () => password ?? process.env.PGPASSWORD ?? (await fromPgpass(base)) ?? NO_PASSWORD;
  return config;
}
