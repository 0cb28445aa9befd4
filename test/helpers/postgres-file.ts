/** One throw-away PostgreSQL cluster per test file (kept apart from postgres.ts, which bench cells import). */
import { after, before } from 'node:test';
import { startCluster, type ClusterOptions, type PgCluster } from './postgres.js';

/** A test file's cluster: started before its tests, stopped after them. */
export interface FileCluster {
  readonly pg: PgCluster;
  /** A new, empty database on it: its name and its URL. */
  freshRemote(): { url: string; db: string };
}

export function clusterForFile(dbPrefix: string, opts: ClusterOptions = {}): FileCluster {
  let pg: PgCluster | undefined;
  let dbs = 0;
  before(async () => {
    pg = await startCluster(opts);
  });
  after(() => pg?.stop());
  return {
    get pg() {
      return pg!;
    },
    freshRemote() {
      const db = `${dbPrefix}${++dbs}`;
      pg!.psql(`CREATE DATABASE ${db}`);
      return { url: pg!.url.replace('/postgres?', `/${db}?`), db };
    },
  };
}
