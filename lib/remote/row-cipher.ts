/**
 * History rows on an encrypted remote (docs/REMOTES.md "What the server sees"). The free text of
 * a row — LayerStack and Branch names, Commit messages, authors and metadata — and every time
 * go into the row's `sealed` column (AES-256-GCM, bound to the row's table and id); the clear
 * columns keep only ids, the head graph and zeros. Names stay usable as keys: the `name` column
 * holds an HMAC of the name under a key derived from the remote's, so lookups by name and the
 * uniqueness constraints work, and the server learns only which names are equal.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { BranchRow, CommitRow, LayerRow, LayerStackRow } from '../history/index.js';
import type { RemoteConnection } from './connection.js';

export type RowTable = 'layer_stacks' | 'layers' | 'commits' | 'branches';

/** The `name` column's value for a name: the name itself, or its HMAC on an encrypted remote. */
export function remoteName(conn: RemoteConnection, kind: 'layerstack' | 'branch', name: string): string {
  return conn.cipher ? conn.cipher.nameTag(kind, name) : name;
}

/** `fields` sealed for the row `id` of `table`; null on a plain remote (the clear columns hold them). */
export function sealFields(conn: RemoteConnection, table: RowTable, id: Buffer, fields: Record<string, unknown>): Buffer | null {
  return conn.cipher ? conn.cipher.sealRow(Buffer.from(JSON.stringify(fields)), `${table} ${toHex(id)}`) : null;
}

function damagedRow(conn: RemoteConnection, table: RowTable, id: Buffer, why: string): LayerFsError {
  return new LayerFsError('ERR_CORRUPT', `the remote ${conn.name} sent a ${table} row ${toHex(id)} whose sealed fields ${why}`, { id: toHex(id), hint: 'the remote holds damaged or forged history; nothing of it was kept' });
}

/** The sealed fields of a row read from an encrypted remote; a row without them, or one that does not open, is ERR_CORRUPT. */
function openFields(conn: RemoteConnection, table: RowTable, id: Buffer, sealed: Buffer | null | undefined): Record<string, unknown> {
  if (!sealed) throw damagedRow(conn, table, id, 'are missing');
  const plain = conn.cipher!.openRow(sealed, `${table} ${toHex(id)}`, `remote ${conn.name} (${table} ${toHex(id)})`);
  try {
    const v: unknown = JSON.parse(plain.toString('utf8'));
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw damagedRow(conn, table, id, 'do not parse');
}

const str = (v: unknown, conn: RemoteConnection, table: RowTable, id: Buffer): string => {
  if (typeof v !== 'string') throw damagedRow(conn, table, id, 'lack a text field');
  return v;
};
const num = (v: unknown, conn: RemoteConnection, table: RowTable, id: Buffer): number => {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw damagedRow(conn, table, id, 'lack a time');
  return v;
};

type Sealed<T> = T & { sealed?: Buffer | null };

/** Puts the sealed fields of each row back in place (encrypted remote) and orders rows as a plain remote would. */
export function unsealSnapshot(conn: RemoteConnection, s: { stacks: Sealed<LayerStackRow>[]; layers: Sealed<LayerRow>[]; branches: Sealed<BranchRow>[]; commits: Sealed<CommitRow>[] }): void {
  if (conn.cipher) {
    for (const r of s.stacks) {
      const f = openFields(conn, 'layer_stacks', r.id, r.sealed);
      r.name = str(f.name, conn, 'layer_stacks', r.id);
      r.createdMs = num(f.createdMs, conn, 'layer_stacks', r.id);
    }
    for (const r of s.layers) r.createdMs = num(openFields(conn, 'layers', r.id, r.sealed).createdMs, conn, 'layers', r.id);
    for (const r of s.branches) {
      const f = openFields(conn, 'branches', r.id, r.sealed);
      r.name = str(f.name, conn, 'branches', r.id);
      r.createdMs = num(f.createdMs, conn, 'branches', r.id);
    }
    for (const r of s.commits) {
      const f = openFields(conn, 'commits', r.id, r.sealed);
      r.message = str(f.message, conn, 'commits', r.id);
      r.author = str(f.author, conn, 'commits', r.id);
      r.metadata = f.metadata === null || f.metadata === undefined ? null : str(f.metadata, conn, 'commits', r.id);
      r.createdMs = num(f.createdMs, conn, 'commits', r.id);
    }
    const byTimeName = (a: { createdMs: number; name: string }, b: { createdMs: number; name: string }) => a.createdMs - b.createdMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    s.stacks.sort(byTimeName);
    s.branches.sort(byTimeName);
    s.commits.sort((a, b) => a.createdMs - b.createdMs || Buffer.compare(a.id, b.id));
  }
  // The column is the remote's form only: rows go on as the Store's rows.
  for (const rows of [s.stacks, s.layers, s.branches, s.commits] as { sealed?: Buffer | null }[][]) for (const r of rows) delete r.sealed;
}

/**
 * At `remote init` of an encrypted remote: seals the rows still in the clear (written before
 * schema version 3), in the init's transaction, so that nothing of their free text stays.
 */
export async function sealClearRows(conn: RemoteConnection): Promise<number> {
  if (!conn.cipher) return 0;
  let n = 0;
  const stacks = await conn.query<{ id: Buffer; name: string; created: number }>('SELECT id, name, created_ms::float8 AS created FROM layerfs.layer_stacks WHERE sealed IS NULL');
  for (const r of stacks) {
    const sealed = sealFields(conn, 'layer_stacks', r.id, { name: r.name, createdMs: r.created });
    n += (await conn.query('UPDATE layerfs.layer_stacks SET name = $1, created_ms = 0, sealed = $2 WHERE id = $3 RETURNING 1', [remoteName(conn, 'layerstack', r.name), sealed, r.id])).length;
  }
  const layers = await conn.query<{ id: Buffer; created: number }>('SELECT id, created_ms::float8 AS created FROM layerfs.layers WHERE sealed IS NULL');
  for (const r of layers) n += (await conn.query('UPDATE layerfs.layers SET created_ms = 0, sealed = $1 WHERE id = $2 RETURNING 1', [sealFields(conn, 'layers', r.id, { createdMs: r.created }), r.id])).length;
  const branches = await conn.query<{ id: Buffer; name: string; created: number }>('SELECT id, name, created_ms::float8 AS created FROM layerfs.branches WHERE sealed IS NULL');
  for (const r of branches) {
    const sealed = sealFields(conn, 'branches', r.id, { name: r.name, createdMs: r.created });
    n += (await conn.query('UPDATE layerfs.branches SET name = $1, created_ms = 0, sealed = $2 WHERE id = $3 RETURNING 1', [remoteName(conn, 'branch', r.name), sealed, r.id])).length;
  }
  const commits = await conn.query<{ id: Buffer; message: string; author: string; metadata: string | null; created: number }>('SELECT id, message, author, metadata, created_ms::float8 AS created FROM layerfs.commits WHERE sealed IS NULL');
  for (const c of commits) {
    const sealed = sealFields(conn, 'commits', c.id, { message: c.message, author: c.author, metadata: c.metadata, createdMs: c.created });
    n += (await conn.query(`UPDATE layerfs.commits SET message = '', author = '', metadata = NULL, created_ms = 0, sealed = $1 WHERE id = $2 RETURNING 1`, [sealed, c.id])).length;
  }
  return n;
}
