/**
 * The remote's schema in PostgreSQL (schema `layerfs`), versioned by the meta row
 * `schema_version`. `remote init` creates it or upgrades it step by step; every other command
 * refuses a remote whose version is not REMOTE_SCHEMA_VERSION (docs/REMOTES.md "Schema").
 */
import { LayerFsError } from '../errors.js';
import type { RemoteConnection } from './connection.js';
import { initRemoteKey } from './encryption.js';
import { sealClearRows } from './row-cipher.js';

interface RemoteStep {
  to: number;
  sql: string;
}

/**
 * Mirrors the Store's tables (docs/FORMAT.md): pack rows of frames as a Store stores them, the
 * object index into them, and the history rows. Pack data is stored EXTERNAL: frames are
 * compressed already, and substring() then reads only the TOAST chunks it needs.
 */
const STEPS: readonly RemoteStep[] = [
  {
    to: 1,
    sql: `
CREATE TABLE layerfs.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE layerfs.packs (id bigserial PRIMARY KEY, data bytea NOT NULL);
ALTER TABLE layerfs.packs ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE TABLE layerfs.objects (
  id bytea PRIMARY KEY CHECK (length(id) = 32),
  kind smallint NOT NULL,
  size integer NOT NULL,
  codec smallint NOT NULL,
  pack bigint NOT NULL REFERENCES layerfs.packs(id),
  "offset" integer NOT NULL,
  length integer NOT NULL,
  at integer NOT NULL DEFAULT 0,
  base bytea
);
CREATE TABLE layerfs.layer_stacks (
  id bytea PRIMARY KEY CHECK (length(id) = 16),
  name text NOT NULL UNIQUE,
  head_layer_id bytea NOT NULL,
  created_ms bigint NOT NULL
);
CREATE TABLE layerfs.layers (
  id bytea PRIMARY KEY CHECK (length(id) = 32),
  layer_stack_id bytea NOT NULL REFERENCES layerfs.layer_stacks(id),
  seq integer NOT NULL,
  parent_layer_id bytea REFERENCES layerfs.layers(id),
  root_id bytea NOT NULL,
  source_branch_id bytea,
  source_commit_id bytea,
  created_ms bigint NOT NULL,
  UNIQUE (layer_stack_id, seq)
);
CREATE TABLE layerfs.commits (
  id bytea PRIMARY KEY CHECK (length(id) = 32),
  root_id bytea NOT NULL,
  parent_commit_id bytea REFERENCES layerfs.commits(id),
  base_layer_id bytea NOT NULL REFERENCES layerfs.layers(id),
  created_ms bigint NOT NULL,
  message text NOT NULL DEFAULT '',
  metadata text,
  author text NOT NULL DEFAULT '',
  id_version smallint NOT NULL DEFAULT 1
);
CREATE TABLE layerfs.branches (
  id bytea PRIMARY KEY CHECK (length(id) = 16),
  layer_stack_id bytea NOT NULL REFERENCES layerfs.layer_stacks(id),
  name text NOT NULL,
  base_layer_id bytea NOT NULL REFERENCES layerfs.layers(id),
  head_commit_id bytea REFERENCES layerfs.commits(id),
  created_ms bigint NOT NULL,
  UNIQUE (layer_stack_id, name)
);
`,
  },
  {
    // Client-side encryption: whether the remote's frames are sealed (and with what), and the
    // key check value clients compare their key with. Older clients must not read sealed frames
    // as if they were plain ones: hence a version.
    to: 2,
    sql: `INSERT INTO layerfs.meta (key, value) VALUES ('encryption', 'none') ON CONFLICT (key) DO NOTHING;`,
  },
  {
    // Sealed history rows (row-cipher.ts): on an encrypted remote the free text and times of a
    // row live in \`sealed\`, and names are HMACs. An older client would read those rows as they
    // stand (empty messages, HMACs for names): hence a version. `remote init` with the key seals
    // the rows an encrypted version-2 remote holds in the clear.
    to: 3,
    sql: `
ALTER TABLE layerfs.layer_stacks ADD COLUMN IF NOT EXISTS sealed bytea;
ALTER TABLE layerfs.layers ADD COLUMN IF NOT EXISTS sealed bytea;
ALTER TABLE layerfs.commits ADD COLUMN IF NOT EXISTS sealed bytea;
ALTER TABLE layerfs.branches ADD COLUMN IF NOT EXISTS sealed bytea;
`,
  },
];

export const REMOTE_SCHEMA_VERSION = STEPS[STEPS.length - 1]!.to;

/** Any transaction-scoped advisory lock key: serializes concurrent `remote init`s. */
const INIT_LOCK = 0x4c46534a;

async function versionOf(conn: RemoteConnection): Promise<number | undefined> {
  const t = await conn.query<{ t: string | null }>(`SELECT to_regclass('layerfs.meta')::text AS t`);
  if (!t[0]?.t) return undefined;
  const v = await conn.query<{ value: string }>(`SELECT value FROM layerfs.meta WHERE key = 'schema_version'`);
  return v[0] ? Number(v[0].value) : undefined;
}

function otherVersion(conn: RemoteConnection, found: number): LayerFsError {
  return new LayerFsError('ERR_REMOTE_SCHEMA', `the remote ${conn.name} has layerfs schema version ${found}; this layerfs uses version ${REMOTE_SCHEMA_VERSION}`, {
    remote: conn.name,
    schemaVersion: found,
    hint: found > REMOTE_SCHEMA_VERSION ? 'upgrade layerfs' : 'run `layerfs remote init REMOTE` to upgrade the remote',
  });
}

/**
 * Creates the schema, or upgrades it; returns the versions before and after. With `key`, a
 * remote that holds no objects yet becomes encrypted (encryption.ts).
 */
export async function initRemoteSchema(conn: RemoteConnection, key?: Buffer): Promise<{ from: number | null; to: number }> {
  return conn.transaction(async () => {
    await conn.query('SELECT pg_advisory_xact_lock($1)', [INIT_LOCK]);
    const from = await versionOf(conn);
    if (from !== undefined && from > REMOTE_SCHEMA_VERSION) throw otherVersion(conn, from);
    if (from === undefined) await conn.query('CREATE SCHEMA IF NOT EXISTS layerfs');
    for (const step of STEPS) if (step.to > (from ?? 0)) await conn.query(step.sql);
    await conn.query(`INSERT INTO layerfs.meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, [String(REMOTE_SCHEMA_VERSION)]);
    await initRemoteKey(conn, key);
    await sealClearRows(conn);
    return { from: from ?? null, to: REMOTE_SCHEMA_VERSION };
  });
}

/**
 * Refuses a remote without the schema, or with another version of it. One query reads every
 * meta row a command needs (the version, and the encryption rows useRemoteKey checks next);
 * returns them.
 */
export async function checkRemoteSchema(conn: RemoteConnection): Promise<Map<string, string>> {
  // Without the schema the table is missing (42P01), which is ERR_REMOTE_SCHEMA already.
  const rows = await conn.query<{ key: string; value: string }>(`SELECT key, value FROM layerfs.meta WHERE key IN ('schema_version', 'encryption', 'key_check')`);
  const meta = new Map(rows.map((r) => [r.key, r.value]));
  const v = meta.get('schema_version');
  if (v === undefined) throw new LayerFsError('ERR_REMOTE_SCHEMA', `the remote ${conn.name} has no layerfs schema`, { remote: conn.name, hint: 'run `layerfs remote init REMOTE` once' });
  if (Number(v) !== REMOTE_SCHEMA_VERSION) throw otherVersion(conn, Number(v));
  return meta;
}
