/**
 * The Store's SQLite schema: SCHEMA (format 3) plus UPGRADE_STEPS, and LAZY_TABLES, which their
 * owners create on first use (Store.createTable). docs/FORMAT.md is the
 * normative description; change both in the same commit, and append a step (which bumps
 * FORMAT_VERSION) for any change an older reader would misread.
 */

/** 'LFSJ': marks a SQLite file as a LayerFS Store (PRAGMA application_id). */
export const APPLICATION_ID = 0x4c46534a;
/** The oldest format this layerfs opens: older formats are upgraded in place (UPGRADE_STEPS). */
export const OLDEST_FORMAT_VERSION = 1;
/**
 * A pack row of small objects is closed once its payload reaches this many bytes: with 64 KiB
 * pages SQLite keeps ~8 KiB of such a row in the table leaf and the rest in one full overflow
 * page, where a 64 KiB row wasted most of a second one (docs/DESIGN.md).
 */
export const PACK_TARGET = 72 * 1024;
/**
 * Small objects are compressed in groups of about this many canonical bytes: a read of one
 * small file decodes its whole group, so this bounds the work of a small read.
 */
export const GROUP_TARGET = 32 * 1024;
/**
 * Tree objects (pages, roots, extent nodes) are grouped much smaller: a small-file read decodes
 * about two cold pages' groups besides the file's own, and pages (mostly 32-byte ids) compress
 * nearly as well in 4 KiB (0.572× vs 0.565× in 16 KiB on the 100,000-file fixture's 8.1 MB of
 * pages; docs/DESIGN.md).
 */
export const TREE_GROUP_TARGET = 4 * 1024;
/**
 * Sealed groups and deltas are assembled into pack rows of about this many stored bytes: SQLite
 * stores a row larger than a page in whole overflow pages, so few large rows waste little page
 * space, while each read still decodes one group's frame only (docs/DESIGN.md).
 */
export const ROW_TARGET = 128 * 1024;
/**
 * Sealed tree groups are assembled into rows of their own of about this many stored bytes
 * (unless a transaction's whole output fits one ROW_TARGET row): SQLite's substr() loads the
 * whole row, so a cold page read cost a 128 KiB row load (~55 µs) where a 32 KiB one costs a
 * quarter of it (docs/DESIGN.md).
 */
export const TREE_ROW_TARGET = 32 * 1024;
/**
 * Chunk rows are cut into zstd frames of about this many bytes, so a random read decodes one.
 * Large files of text (bundles, type declarations, source maps) repeat themselves over long
 * stretches: docs/DECISIONS.md has the sizes of 64 KiB, 256 KiB and 1 MiB frames.
 */
export const CHUNK_FRAME_TARGET = 256 * 1024;
/** The chunks of one file are packed into rows of about this many bytes (docs/FORMAT.md). */
export const CHUNK_PACK_TARGET = 1024 * 1024;
/**
 * SQLite page size of new Stores. SQLite's write cost is per page (a WAL frame is two pwrites and
 * a checksum): 64 KiB pages wrote large rows about twice as fast as 16 KiB ones.
 */
export const PAGE_SIZE = 8192;

/** What an upgrade step's `migrate` runs SQL with (the Store's connection). */
export interface MigrateDb {
  exec(sql: string): unknown;
  prepare(sql: string): { get(...params: unknown[]): unknown };
}

/**
 * One step of the format's history: the SQL that turns a Store of format `to - 1` into format
 * `to`. Steps run in order, each in the upgrade's one write transaction; a new Store runs SCHEMA
 * (format BASE_FORMAT_VERSION) and then every later step, so each format change lives in one
 * place. Every step has a section in docs/FORMAT.md.
 */
export interface UpgradeStep {
  readonly to: number;
  readonly sql: string;
  /**
   * For a step that adds columns: TEMP views that give a read-only connection to an older Store
   * (which cannot upgrade) the new columns with their defaults. See readShimOf.
   */
  readonly readViews?: string;
  /**
   * The tables the format added that are made on first use since format 11 (LAZY_TABLES): the
   * step itself creates none of them.
   */
  readonly tables?: readonly LazyTable[];
  /**
   * Row rewrites the step's SQL cannot say conditionally (a table made only when a Store needs
   * it); runs after `sql` in the same transaction, on upgrades only (a new Store has no rows).
   */
  readonly migrate?: (db: MigrateDb) => void;
}

/**
 * Tables most Stores never use (format 11): a Store has none of them until the folder owning one
 * (scripts/lint-tables.mjs) first writes a row, and a missing one reads as empty. Each empty
 * table cost a root page per table and per index (27 pages of 8 KiB in every Store, 0.2 MB).
 * Keys are the table names; each value creates the table and its indexes, IF NOT EXISTS.
 */
export const LAZY_TABLES = {
  // Format 5: named execution profiles (limits, mounts, network) and which Workspaces run in one.
  sandboxes: `
CREATE TABLE IF NOT EXISTS sandboxes (
  id         BLOB PRIMARY KEY CHECK (length(id) = 16),
  name       TEXT NOT NULL UNIQUE,
  profile    TEXT NOT NULL,
  created_ms INTEGER NOT NULL
) STRICT;`,
  workspace_sandboxes: `
CREATE TABLE IF NOT EXISTS workspace_sandboxes (
  workspace_id BLOB PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
  sandbox_id   BLOB NOT NULL REFERENCES sandboxes(id)
) STRICT;
CREATE INDEX IF NOT EXISTS workspace_sandboxes_by_sandbox ON workspace_sandboxes(sandbox_id);`,
  // Format 6: remotes and the remote heads this Store saw at its last fetch or push.
  remotes: `
CREATE TABLE IF NOT EXISTS remotes (
  name       TEXT PRIMARY KEY,
  url        TEXT NOT NULL,
  created_ms INTEGER NOT NULL
) STRICT;`,
  remote_refs: `
CREATE TABLE IF NOT EXISTS remote_refs (
  remote         TEXT NOT NULL REFERENCES remotes(name) ON DELETE CASCADE,
  kind           TEXT NOT NULL CHECK (kind IN ('layerstack', 'branch')),
  name           TEXT NOT NULL,
  layer_stack_id BLOB NOT NULL CHECK (length(layer_stack_id) = 16),
  id             BLOB NOT NULL,
  head           BLOB,
  base_layer_id  BLOB,
  updated_ms     INTEGER NOT NULL,
  PRIMARY KEY (remote, kind, layer_stack_id, name)
) STRICT;`,
  // Format 7: named pins of a Branch's state.
  checkpoints: `
CREATE TABLE IF NOT EXISTS checkpoints (
  branch_id     BLOB NOT NULL REFERENCES branches(id),
  name          TEXT NOT NULL,
  commit_id     BLOB REFERENCES commits(id),
  base_layer_id BLOB NOT NULL REFERENCES layers(id),
  root_id       BLOB NOT NULL,
  created_ms    INTEGER NOT NULL,
  PRIMARY KEY (branch_id, name)
) STRICT;`,
  // Format 8: retention and garbage collection (docs/FORMAT.md "Format 8").
  tombstones: `
CREATE TABLE IF NOT EXISTS tombstones (
  kind           TEXT NOT NULL,
  id             BLOB NOT NULL,
  name           TEXT NOT NULL,
  layer_stack_id BLOB NOT NULL,
  layer_stack    TEXT NOT NULL,
  head_id        BLOB,
  deleted_ms     INTEGER NOT NULL,
  PRIMARY KEY (kind, id)
) STRICT;
CREATE INDEX IF NOT EXISTS tombstones_by_name ON tombstones (kind, name, deleted_ms);`,
  pins: `
CREATE TABLE IF NOT EXISTS pins (
  state      TEXT PRIMARY KEY,
  root_id    BLOB NOT NULL CHECK (length(root_id) = 32),
  created_ms INTEGER NOT NULL
) STRICT;`,
  retention: `
CREATE TABLE IF NOT EXISTS retention (
  key   TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) STRICT;`,
  holds: `
CREATE TABLE IF NOT EXISTS holds (
  id         BLOB PRIMARY KEY CHECK (length(id) = 16),
  root_id    BLOB NOT NULL CHECK (length(root_id) = 32),
  purpose    TEXT NOT NULL,
  created_ms INTEGER NOT NULL
) STRICT;`,
  pruned_commits: `
CREATE TABLE IF NOT EXISTS pruned_commits (
  id        BLOB PRIMARY KEY CHECK (length(id) = 32),
  pruned_ms INTEGER NOT NULL
) STRICT;`,
  fork_bases: `
CREATE TABLE IF NOT EXISTS fork_bases (
  branch_id BLOB PRIMARY KEY CHECK (length(branch_id) = 16),
  commit_id BLOB NOT NULL CHECK (length(commit_id) = 32)
) STRICT;`,
  // Format 9: conflicts of reconciling commits, kept per Workspace until resolved and committed.
  workspace_conflicts: `
CREATE TABLE IF NOT EXISTS workspace_conflicts (
  workspace_id   BLOB NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  seq            INTEGER NOT NULL,
  path           TEXT NOT NULL,
  kind           TEXT NOT NULL,
  head_commit_id BLOB,
  detail         TEXT NOT NULL,
  resolution     TEXT,
  created_ms     INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, seq)
) STRICT;`,
  // Format 12: the dictionaries codec-3 rows name by a short ref (lib/store/dictionary-refs.ts).
  dictionaries: `
CREATE TABLE IF NOT EXISTS dictionaries (
  ref BLOB PRIMARY KEY CHECK (length(ref) BETWEEN 1 AND 2),
  id  BLOB NOT NULL CHECK (length(id) = 32)
) STRICT, WITHOUT ROWID;`,
} as const;

export type LazyTable = keyof typeof LAZY_TABLES;

/**
 * What a read-only connection to an older Store runs for this step so that it reads like this
 * format: the step's views, then each CREATE TABLE of the step as an empty TEMP table.
 */
export function readShimOf(step: UpgradeStep): string {
  const tables = step.sql
    .split(';')
    .map((stmt) => stmt.trim())
    .filter((stmt) => /^CREATE TABLE/i.test(stmt))
    .map((stmt) => `${stmt.replace(/^CREATE TABLE( IF NOT EXISTS)?/i, 'CREATE TEMP TABLE IF NOT EXISTS')};`);
  return [step.readViews ?? '', ...tables].join('\n');
}

/** The format SCHEMA below creates; later formats are SCHEMA plus the steps after it. */
export const BASE_FORMAT_VERSION = 3;

export const UPGRADE_STEPS: readonly UpgradeStep[] = [
  // Format-1 objects are all raw, which format 2 reads as is.
  { to: 2, sql: `
ALTER TABLE objects ADD COLUMN at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE objects ADD COLUMN base BLOB;
` },
  // No table changes: format 3 writers may store deltas with several bases, which a format-2
  // reader would misread.
  { to: 3, sql: '' },
  // Commit notes: message, metadata and author, covered by the id of every Commit made from now
  // on (id_version 2); earlier Commits keep their ids (id_version 1) and an empty note.
  { to: 4, sql: `
ALTER TABLE commits ADD COLUMN message TEXT NOT NULL DEFAULT '';
ALTER TABLE commits ADD COLUMN metadata TEXT;
ALTER TABLE commits ADD COLUMN author TEXT NOT NULL DEFAULT '';
ALTER TABLE commits ADD COLUMN id_version INTEGER NOT NULL DEFAULT 1;
`, readViews: `CREATE TEMP VIEW IF NOT EXISTS commits AS SELECT id, root_id, parent_commit_id, base_layer_id, created_ms, '' AS message, NULL AS metadata, '' AS author, 1 AS id_version FROM main.commits;` },
  // Sandboxes: named execution profiles (limits, mounts, network) and which Workspaces run in one.
  // Since format 11 these tables (LAZY_TABLES) are made on first use, so the step adds nothing.
  { to: 5, sql: '', tables: ['sandboxes', 'workspace_sandboxes'] },
  // Remotes (docs/REMOTES.md): where this Store pushes and fetches, and the remote heads it saw
  // at its last fetch or push. No password is ever stored here.
  { to: 6, sql: '', tables: ['remotes', 'remote_refs'] },
  // Tool calls: a Workspace records the process that owns it (pid, /proc start time, boot id) so
  // one left by a killed process is ended only once that process is proven gone; checkpoints are
  // named pins of a Branch's state.
  { to: 7, sql: `
ALTER TABLE workspaces ADD COLUMN owner_pid INTEGER;
ALTER TABLE workspaces ADD COLUMN owner_start TEXT;
ALTER TABLE workspaces ADD COLUMN owner_boot TEXT;
`, readViews: `CREATE TEMP VIEW IF NOT EXISTS workspaces AS SELECT *, NULL AS owner_pid, NULL AS owner_start, NULL AS owner_boot FROM main.workspaces;`, tables: ['checkpoints'] },
  // Retention and garbage collection (docs/FORMAT.md "Format 8"): what was deleted and when,
  // pinned states, the retention policy, states held by multi-transaction operations, and the
  // Commit each Branch was forked from (always kept by retention).
  { to: 8, sql: '', tables: ['tombstones', 'pins', 'retention', 'holds', 'pruned_commits', 'fork_bases'] },
  // Conflicts of reconciling commits, kept per Workspace until resolved and committed.
  { to: 9, sql: '', tables: ['workspace_conflicts'] },
  // No table changes: objects of kind 6 (zstd dictionaries) and codec 3 (a group frame
  // compressed with one, named in `base`), which a format-9 reader would refuse as damage.
  { to: 10, sql: '' },
  // No table changes: the tables of LAZY_TABLES may be missing (a new Store has none of them;
  // an upgraded one keeps those it has), which a format-10 reader would take for damage.
  { to: 11, sql: '' },
  // A codec-3 row names its dictionary by a 1–2 byte ref into `dictionaries` (made on first
  // use) instead of its 32-byte id (docs/FORMAT.md "Format 12"): a format-11 reader would take
  // the ref for a damaged id. The upgrade gives each dictionary named by a row a ref, in id
  // order, and rewrites those rows' `base`; the file shrinks at the next VACUUM (db repack).
  { to: 12, sql: '', tables: ['dictionaries'], migrate: upgradeDictionaryRefs },
  // No table changes: a mount may store content before its commit publishes it, trusting it
  // while the `meta` row `gc_epoch` is unchanged (lib/store/gc-epoch.ts); a format-12 gc would
  // delete such content without advancing the epoch.
  { to: 13, sql: '' },
];

/** Format 12's upgrade of codec-3 rows (UPGRADE_STEPS): refs 1, 2, … in id order (dictionary-refs.ts encodes them alike). */
function upgradeDictionaryRefs(db: MigrateDb): void {
  if (db.prepare('SELECT 1 FROM objects WHERE codec = 3 AND length(base) = 32 LIMIT 1').get() === undefined) return;
  db.exec(`${LAZY_TABLES.dictionaries}
INSERT INTO dictionaries (ref, id)
  SELECT unhex(CASE WHEN n < 256 THEN printf('%02x', n) ELSE printf('%04x', n) END), base
    FROM (SELECT base, row_number() OVER (ORDER BY base) AS n FROM (SELECT DISTINCT base FROM objects WHERE codec = 3 AND length(base) = 32))
   WHERE n <= 65535;
UPDATE objects SET base = (SELECT ref FROM dictionaries d WHERE d.id = objects.base)
 WHERE codec = 3 AND length(base) = 32 AND base IN (SELECT id FROM dictionaries);`);
}

/** The format this layerfs writes: the last step's. */
export const FORMAT_VERSION = UPGRADE_STEPS[UPGRADE_STEPS.length - 1]!.to;

export const SCHEMA = `
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

-- Object payloads, packed: many objects share one row of about PACK_TARGET bytes, appended in
-- insertion order. One row per small object costs more per byte than the bytes themselves.
CREATE TABLE packs (
  id   INTEGER PRIMARY KEY,
  data BLOB NOT NULL
) STRICT;

-- The object index: where each content-addressed object lives inside a pack, and how its
-- stored bytes decode (codec; docs/FORMAT.md "Physical forms").
CREATE TABLE objects (
  id     BLOB PRIMARY KEY CHECK (length(id) = 32),
  kind   INTEGER NOT NULL,
  size   INTEGER NOT NULL,
  codec  INTEGER NOT NULL,
  pack   INTEGER NOT NULL,
  offset INTEGER NOT NULL,
  length INTEGER NOT NULL,
  at     INTEGER NOT NULL DEFAULT 0,
  base   BLOB
) STRICT, WITHOUT ROWID;

CREATE TABLE layer_stacks (
  id            BLOB PRIMARY KEY CHECK (length(id) = 16),
  name          TEXT NOT NULL UNIQUE,
  head_layer_id BLOB NOT NULL,
  created_ms    INTEGER NOT NULL
) STRICT;

CREATE TABLE layers (
  id               BLOB PRIMARY KEY CHECK (length(id) = 32),
  layer_stack_id   BLOB NOT NULL REFERENCES layer_stacks(id),
  seq              INTEGER NOT NULL,
  parent_layer_id  BLOB REFERENCES layers(id),
  root_id          BLOB NOT NULL,
  source_branch_id BLOB,
  source_commit_id BLOB,
  created_ms       INTEGER NOT NULL,
  UNIQUE (layer_stack_id, seq),
  UNIQUE (source_branch_id, source_commit_id)
) STRICT;

CREATE TABLE branches (
  id             BLOB PRIMARY KEY CHECK (length(id) = 16),
  layer_stack_id BLOB NOT NULL REFERENCES layer_stacks(id),
  name           TEXT NOT NULL,
  base_layer_id  BLOB NOT NULL REFERENCES layers(id),
  head_commit_id BLOB REFERENCES commits(id),
  created_ms     INTEGER NOT NULL,
  UNIQUE (layer_stack_id, name)
) STRICT;

CREATE TABLE commits (
  id               BLOB PRIMARY KEY CHECK (length(id) = 32),
  root_id          BLOB NOT NULL,
  parent_commit_id BLOB REFERENCES commits(id),
  base_layer_id    BLOB NOT NULL REFERENCES layers(id),
  created_ms       INTEGER NOT NULL
) STRICT;

CREATE TABLE workspaces (
  id               BLOB PRIMARY KEY CHECK (length(id) = 16),
  branch_id        BLOB NOT NULL REFERENCES branches(id),
  path             TEXT NOT NULL UNIQUE,
  projection       TEXT NOT NULL,
  base_root_id     BLOB NOT NULL,
  expected_head_id BLOB,
  expected_base_id BLOB NOT NULL,
  state            TEXT NOT NULL,
  created_ms       INTEGER NOT NULL
) STRICT;

-- The stat cache of a materialized Workspace: what each path looked like when the Workspace
-- last matched a stored state, so a commit re-reads only paths whose stat changed. Entries are
-- packed into segments of about 640 (layout in docs/FORMAT.md); one row per path cost more to
-- load than the walk it is compared with, and one blob for all would be rewritten per commit.
CREATE TABLE workspace_caches (
  workspace_id BLOB PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
  count        INTEGER NOT NULL,
  max_serial   INTEGER NOT NULL,
  segments     BLOB NOT NULL
) STRICT;

CREATE TABLE workspace_entries (
  workspace_id BLOB NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  id           BLOB NOT NULL CHECK (length(id) = 16),
  data         BLOB NOT NULL,
  PRIMARY KEY (workspace_id, id)
) STRICT;
`;
