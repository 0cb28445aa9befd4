/**
 * remote verify: reads everything the remote's states reach, decodes and re-hashes every object
 * and re-derives every Layer and Commit id, storing nothing. The remote's own view of its data
 * (PostgreSQL runs no layerfs code), from a client that trusts none of it.
 */
import { LayerFsError } from '../errors.js';
import type { RemoteConnection } from './connection.js';
import { checkIds, snapshot } from './fetch.js';
import { RemoteObjects } from './pg-objects.js';
import { findMissing, keyOf } from './walk.js';

export interface RemoteVerifyReport {
  ok: boolean;
  remote: string;
  states: number;
  objectsChecked: number;
  bytesChecked: number;
  /** The first damage found (the check stops there), or null. */
  damage: { id: string | null; message: string } | null;
}

/** Objects read per query while checking content. */
const CHECK_BATCH = 2048;

export async function verifyRemote(conn: RemoteConnection): Promise<RemoteVerifyReport> {
  const s = await snapshot(conn);
  const roots = [...s.layers.map((l) => l.rootId), ...s.commits.map((c) => c.rootId)];
  const report: RemoteVerifyReport = { ok: true, remote: conn.name, states: roots.length, objectsChecked: 0, bytesChecked: 0, damage: null };
  try {
    checkIds(s, conn.name);
    const remote = new RemoteObjects(conn);
    // Nothing is held here, so the walk opens every tree object (decoded and re-hashed).
    const m = await findMissing(roots, remote, { has: async () => new Set<string>() });
    for (let i = 0; i < m.order.length; i += CHECK_BATCH) {
      const part = m.order.slice(i, i + CHECK_BATCH).map((r) => r.id);
      const got = await remote.canonical(part);
      for (const id of part) {
        report.objectsChecked++;
        report.bytesChecked += got.get(keyOf(id))!.length;
      }
      remote.forget(part);
    }
  } catch (e) {
    if (!(e instanceof LayerFsError) || e.code !== 'ERR_CORRUPT') throw e;
    report.ok = false;
    report.damage = { id: typeof e.details.id === 'string' ? e.details.id : null, message: e.message };
  }
  return report;
}
