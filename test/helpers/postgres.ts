/**
 * A throw-away PostgreSQL 15 cluster for tests and benchmarks: initdb in a temporary directory
 * owned by an unprivileged uid (PostgreSQL refuses to run as root), started with pg_ctl on a
 * Unix socket in that directory (and, when asked, on 127.0.0.1 at a free port with SCRAM
 * passwords), stopped and removed by stop().
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const PG_BIN = '/usr/lib/postgresql/15/bin';
/** nobody:nogroup on Debian. */
const UID = 65534;
const GID = 65534;

export interface PgCluster {
  dir: string;
  port: number;
  /** The database user tests connect as (the cluster's superuser). */
  user: string;
  /** A connection URL over the Unix socket (no password). */
  url: string;
  /** A connection URL over TCP on 127.0.0.1 (only with `tcp`), without the password. */
  tcpUrl?: string;
  password?: string;
  /** With `tls`: the certificate to verify the server with (sslrootcert). */
  caFile?: string;
  stop(): void;
  /** Runs SQL with psql over the Unix socket as the superuser, in database `db` (default postgres). */
  psql(sql: string, db?: string): string;
}

export interface ClusterOptions {
  /** Also listen on 127.0.0.1; every connection (socket included) then needs the SCRAM password. */
  password?: string;
  /** Durable settings (fsync on) for benchmarks; tests run with fsync off. */
  durable?: boolean;
  /**
   * With `password`: TCP connections must use TLS (a self-signed certificate for localhost and
   * 127.0.0.1, written to `caFile`); plain TCP connections are refused by pg_hba.
   */
  tls?: boolean;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function asPostgres(argv: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync('setpriv', [`--reuid=${UID}`, `--regid=${GID}`, '--clear-groups', ...argv], {
    env: { PATH: `${PG_BIN}:/usr/bin:/bin`, LANG: 'C', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }).toString();
}

export async function startCluster(opts: ClusterOptions = {}): Promise<PgCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'lfpg-'));
  chmodSync(dir, 0o755);
  chownSync(dir, UID, GID);
  const data = join(dir, 'data');
  const user = 'layerfs';
  const auth = ['--auth-local=trust', '--auth-host=trust'];
  if (opts.password !== undefined) {
    const pw = join(dir, 'pw');
    writeFileSync(pw, opts.password + '\n', { mode: 0o600 });
    chownSync(pw, UID, GID);
    auth.splice(0, 2, '--auth-local=scram-sha-256', '--auth-host=scram-sha-256', `--pwfile=${pw}`);
  }
  asPostgres([`${PG_BIN}/initdb`, '-D', data, '-U', user, '-E', 'UTF8', '--no-sync', ...auth]);
  let caFile: string | undefined;
  if (opts.tls) {
    caFile = join(dir, 'server.crt');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', join(data, 'server.key'), '-out', join(data, 'server.crt')], { stdio: 'ignore' });
    writeFileSync(caFile, execFileSync('cat', [join(data, 'server.crt')]));
    for (const f of ['server.key', 'server.crt']) chownSync(join(data, f), UID, GID);
    chmodSync(join(data, 'server.key'), 0o600);
    // Only TLS over TCP; the Unix socket (psql of the tests) stays as it was.
    writeFileSync(join(data, 'pg_hba.conf'), 'local all all scram-sha-256\nhostssl all all 127.0.0.1/32 scram-sha-256\n');
  }
  const port = await freePort();
  const listen = opts.password !== undefined ? '127.0.0.1' : '';
  const settings = [`-k ${dir}`, `-p ${port}`, `-c listen_addresses='${listen}'`, '-c max_connections=60', '-c shared_buffers=64MB'];
  if (opts.tls) settings.push('-c ssl=on');
  if (!opts.durable) settings.push('-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off');
  asPostgres([`${PG_BIN}/pg_ctl`, 'start', '-w', '-D', data, '-l', join(dir, 'log'), '-o', settings.join(' ')]);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      asPostgres([`${PG_BIN}/pg_ctl`, 'stop', '-w', '-m', 'immediate', '-D', data]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const psql = (sql: string, db = 'postgres') =>
    asPostgres([`${PG_BIN}/psql`, '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', dir, '-p', String(port), '-U', user, '-d', db, '-c', sql], opts.password ? { PGPASSWORD: opts.password } : {});
  const url = `postgres://${user}@localhost/postgres?host=${encodeURIComponent(dir)}&port=${port}`;
  return {
    dir,
    port,
    user,
    url,
    tcpUrl: opts.password !== undefined ? `postgres://${user}@127.0.0.1:${port}/postgres` : undefined,
    password: opts.password,
    caFile,
    stop,
    psql,
  };
}
