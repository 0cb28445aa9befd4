// The set-up the Workspace cells share (workspace_commit, edit_length_preserving,
// branch_development): a Store holding the fixture as LayerStack 'bench', a Branch forked from
// its genesis Layer and a materialized Workspace of it, each step timed; then the Client is closed
// and reconnected and warmed by a no-op commit, so the timed commits run on a warm, reopened Store
// as a later process's would.

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, type InitReceipt, type WorkspaceInfo } from '../../lib/sdk/index.js';
import { selfMaxRssMiB } from './cell.js';
import { r1, storeFiles } from './measure.js';

export interface OpenedWorkspace {
  /** The reconnected Client. */
  c: Client;
  init: InitReceipt;
  branch: string;
  ws: WorkspaceInfo;
  /** Client.create + initLayerStack, as in init_namespace. */
  initMs: number;
  /** createWorkspace (materialize). */
  materializeMs: number;
  /** The no-op commit of the unedited Workspace (UpToDate): finding changes alone. */
  noopMs: number;
  /** Store file + WAL after the close: the close checkpoints the WAL, so later growth is the commits' own. */
  filesBefore: ReturnType<typeof storeFiles>;
  /** Peak RSS after import and materialize, before any commit. */
  rssBeforeCommitsMiB: number;
}

/** Creates the Store at `storePath` from `fixtureDir`, a Branch `branch` and its Workspace at `wsDir` (see the module comment). */
export async function openWorkspace(storePath: string, fixtureDir: string, wsDir: string, branch = 'work'): Promise<OpenedWorkspace> {
  let t = performance.now();
  const created = Client.create(storePath);
  const init = await created.initLayerStack({ name: 'bench', source: path.resolve(fixtureDir) });
  const initMs = performance.now() - t;
  created.forkBranch({ name: branch, layer: init.layer.id });
  t = performance.now();
  const ws = await created.createWorkspace(branch, { at: wsDir });
  const materializeMs = performance.now() - t;
  const rssBeforeCommitsMiB = r1(selfMaxRssMiB());
  await created.close();
  const filesBefore = storeFiles(storePath);
  const c = Client.connect(storePath);
  t = performance.now();
  const noop = await c.commitWorkspace(ws.id);
  const noopMs = performance.now() - t;
  if (noop.outcome !== 'UpToDate') throw new Error(`commitWorkspace of an unedited Workspace: outcome ${noop.outcome}, expected UpToDate`);
  return { c, init, branch, ws, initMs, materializeMs, noopMs, filesBefore, rssBeforeCommitsMiB };
}
