/**
 * The materialize Projection: the Workspace is a plain directory written from the state
 * (manager.ts), its changes found by a walk compared with the stat cache, its commit run in this
 * process.
 */
import { commitWorkspace, createWorkspace, endWorkspace, workspaceStatus } from './manager.js';
import { registerProjection, type ProjectionImpl } from './projection.js';

const text = (b: Buffer): string => b.toString('utf8');

export const materializeProjection: ProjectionImpl = {
  available: () => true,
  create: async (store, branch, at, req) => createWorkspace(store, branch, at, 'materialize', { owner: req.owner ?? null, ...(req.onProgress ? { onProgress: req.onProgress } : {}) }),
  async changes(store, ws) {
    const s = workspaceStatus(store, ws);
    return { changes: s.entries.map((e) => ({ change: e.change, path: text(e.path), ...(e.oldPath ? { oldPath: text(e.oldPath) } : {}), kind: e.kind })), skipped: s.skipped };
  },
  async commit(store, ws, stateDir, run) {
    const phases = { walkRead: 0, chunkHash: 0, write: 0 };
    const outcome = await commitWorkspace(store, ws, stateDir, phases, run);
    const reconcileMs = outcome.outcome === 'Created' ? outcome.reconciled?.ms : outcome.outcome === 'Conflicted' ? outcome.ms : undefined;
    return { outcome, measure: { phases, ...(reconcileMs !== undefined ? { reconcileMs } : {}) } };
  },
  end: (store, ws, req, stateDir) => endWorkspace(store, ws, req, stateDir),
  states: (_storePath, rows) => rows.map(() => 'active'),
  execDir: (ws) => ws.path,
};

registerProjection('materialize', materializeProjection);
