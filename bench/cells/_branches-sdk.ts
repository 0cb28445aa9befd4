// Shared by the Branch / Workspace cells (layerfs-branch-fork, layerfs-workspace-commit,
// layerfs-parallel-branches); not a cell itself. Loads the SDK through a computed URL, like
// bench/lib/layerfs.ts, so these cells type-check and fail with a clean error row (not a compile
// error) while lib/sdk is changing. BranchSdk is the slice of the Client API the cells rely on;
// keep it in step with lib/sdk/client.ts and docs/SDK.md.

import fs from 'node:fs';
import { performance } from 'node:perf_hooks';

export interface BranchInfoShape {
  id: string;
  name: string;
  headCommitId: string | null;
}
export interface WorkspaceInfoShape {
  id: string;
  path: string;
}
export interface CommitReceiptShape {
  outcome: 'Created' | 'UpToDate' | 'Busy' | 'HeadMoved';
  ms: number;
  objectsInserted?: number;
  objectsReused?: number;
  bytesInserted?: number;
  bytesReused?: number;
  semanticGrowth?: number;
  allocatedGrowth?: number;
  changedPaths?: number;
  commit?: { id: string };
  [more: string]: unknown;
}
export interface InitReceiptShape {
  ms?: number;
  layer: { id: string; rootId?: string };
  bytesInserted?: number;
  objectsInserted?: number;
  [more: string]: unknown;
}
export interface InfoShape {
  fileBytes: number;
  objects: number;
  [more: string]: unknown;
}

export interface RepackReceiptShape {
  ms: number;
  level?: number;
  objects?: number;
  fileBytesBefore?: number;
  fileBytesAfter?: number;
  rewriteMs?: number;
  vacuumMs?: number;
  [more: string]: unknown;
}

export interface BranchClient {
  initLayerStack(opts: { name: string; source: string }): Promise<InitReceiptShape>;
  forkBranch(opts: { name: string; layer: string } | { name: string; branch: string; commit: string }): BranchInfoShape;
  createWorkspace(branch: string, opts: { at: string }): Promise<WorkspaceInfoShape> | WorkspaceInfoShape;
  commitWorkspace(ref: string): Promise<CommitReceiptShape>;
  endWorkspace(ref: string, opts?: { discard?: boolean }): Promise<unknown>;
  add(branch: string): { outcome: string; [more: string]: unknown };
  log(branch: string, opts?: { limit?: number }): { id: string }[];
  cat(ref: string, path: string): Buffer;
  info(): InfoShape;
  /** `db repack` (optional: absent in older SDKs, then the cells report no repack figures). */
  repack?(opts?: { level?: number }): Promise<RepackReceiptShape>;
  close(): void | Promise<void>;
}
export interface BranchSdk {
  Client: { create(storePath: string): BranchClient; connect(storePath: string): BranchClient };
}

const SDK_URL = new URL('../../lib/sdk/index.js', import.meta.url);

const NEEDED = ['initLayerStack', 'forkBranch', 'createWorkspace', 'commitWorkspace', 'info', 'close'] as const;

export async function loadBranchSdk(): Promise<BranchSdk> {
  const mod = (await import(SDK_URL.href)) as Partial<BranchSdk>;
  const C = mod.Client as unknown as { create?: unknown; connect?: unknown; prototype?: Record<string, unknown> } | undefined;
  if (typeof C?.create !== 'function' || typeof C.connect !== 'function') {
    throw new Error(`${SDK_URL.pathname}: no Client.create / Client.connect export`);
  }
  const missing = NEEDED.filter((m) => typeof C.prototype?.[m] !== 'function');
  if (missing.length > 0) throw new Error(`${SDK_URL.pathname}: Client lacks ${missing.join(', ')}`);
  return mod as BranchSdk;
}

/** Apparent and allocated bytes of the Store file plus its WAL (absent WAL counts 0). */
export function storeFiles(storePath: string): { bytes: number; allocated: number; walBytes: number } {
  let bytes = 0;
  let allocated = 0;
  let walBytes = 0;
  for (const f of [storePath, `${storePath}-wal`]) {
    try {
      const st = fs.statSync(f);
      bytes += st.size;
      allocated += st.blocks * 512;
      if (f !== storePath) walBytes = st.size;
    } catch {
      // no WAL right now
    }
  }
  return { bytes, allocated, walBytes };
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Nearest-rank percentile (p in 0..100). */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/**
 * Repacks the Store at `storePath` on a connection of its own (`db repack`, like git gc
 * --aggressive) and returns its time and the Store file + WAL bytes after the close.
 */
export async function repackStore(sdk: BranchSdk, storePath: string): Promise<{ repackMs: number; repackedBytes: number; repackRewriteMs?: number; repackVacuumMs?: number } | undefined> {
  const c = sdk.Client.connect(storePath);
  try {
    if (typeof c.repack !== 'function') return undefined;
    const t = performance.now();
    const r = await c.repack();
    const repackMs = performance.now() - t;
    await c.close();
    return { repackMs: Math.round(repackMs), repackedBytes: storeFiles(storePath).bytes, repackRewriteMs: r.rewriteMs === undefined ? undefined : Math.round(r.rewriteMs), repackVacuumMs: r.vacuumMs === undefined ? undefined : Math.round(r.vacuumMs) };
  } catch (e) {
    await c.close();
    throw e;
  }
}
