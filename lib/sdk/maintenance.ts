/**
 * The Store as a whole: its figures, verified online backups, verification, repacking, and the
 * dedup analysis across every state.
 */
import { statSync } from 'node:fs';
import { toHex } from '../format/hex.js';
import { branchLog, historyCounts, keptCommits, keptStates, listBranches, listLayers, listLayerStacks, resolveLayerStack } from '../history/index.js';
import { analyzeDedup as analyze } from '../store/analyze.js';
import { Store } from '../store/store.js';
import { verifyStore, type VerifyProgress } from '../store/verify.js';
import type { BackupProgress } from '../store/backup.js';
import { verifiedBackup } from './archive.js';
import type { ClientContext } from './context.js';
import { maintenanceClaim, workspaceRoots } from '../workspace/index.js';
import type { BackupReceipt, DedupAnalysis, RepackProgress, RepackReceipt, StoreInfoResult, VerifyResult } from './types.js';

export function info(store: Store): StoreInfoResult {
  const c = store.read(() => ({ ...store.counts(), ...historyCounts(store) }));
  let fileBytes = 0;
  for (const f of [store.path, `${store.path}-wal`]) {
    try {
      fileBytes += statSync(f).size;
    } catch {
      /* no WAL right now */
    }
  }
  return {
    path: store.path,
    formatVersion: store.info.formatVersion,
    storeId: store.info.storeId,
    createdAt: new Date(store.info.createdMs).toISOString(),
    layerStacks: c.layerStacks,
    layers: c.layers,
    objects: c.objects,
    fileBytes,
  };
}

export function verify(store: Store, opts: { onProgress?: (p: VerifyProgress) => void }): VerifyResult {
  return store.read(() => {
    // The states retention keeps: Commits it no longer keeps (pruned, or of deleted
    // Branches) may have been reclaimed by db gc.
    const r = verifyStore(store, keptStates(store, workspaceRoots(store)), opts.onProgress);
    return { ...r };
  });
}

export async function backup(ctx: ClientContext, dest: string, opts: { onProgress?: (p: BackupProgress) => void }): Promise<BackupReceipt> {
  const t0 = performance.now();
  const verifyCopy = (path: string): VerifyResult => {
    const copy = Store.open(path, { readonly: true });
    try {
      return verify(copy, {});
    } finally {
      copy.close();
    }
  };
  const r = await verifiedBackup(ctx.store, dest, verifyCopy, opts.onProgress);
  const base = ctx.receipt('db.backup', 'BackedUp', t0, ctx.store.meter.allocatedGrowth, null);
  const { verify: v, ...rest } = r;
  return ctx.monitor.record({ ...base, outcome: 'BackedUp', ...rest, states: v.states, objectsChecked: v.objectsChecked } as BackupReceipt) as BackupReceipt;
}

export async function repack(ctx: ClientContext, opts: { level?: number; full?: boolean; onProgress?: (p: RepackProgress) => void }): Promise<RepackReceipt> {
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const r = await ctx.store.repack({ level: opts.level, full: opts.full, onProgress: opts.onProgress }, maintenanceClaim());
  const base = ctx.receipt('db.repack', 'Repacked', t0, a0, null);
  return ctx.monitor.record({
    ...base,
    outcome: 'Repacked',
    allocatedGrowth: r.fileBytesAfter - r.fileBytesBefore,
    level: r.level,
    rowsBefore: r.rowsBefore,
    rowsAfter: r.rowsAfter,
    rowsSkipped: r.rowsSkipped,
    rowsKept: r.rowsKept,
    objects: r.objects,
    storedBytesBefore: r.storedBytesBefore,
    storedBytesAfter: r.storedBytesAfter,
    fileBytesBefore: r.fileBytesBefore,
    fileBytesAfter: r.fileBytesAfter,
    transactions: r.transactions,
    rewriteMs: r.rewriteMs,
    vacuumMs: r.vacuumMs,
  } as RepackReceipt) as RepackReceipt;
}

type DedupState = { kind: string; id: string; rootId: Buffer; label: string };

/** Every Layer, then every kept Commit once (labelled by the Branch that made it first). */
function dedupStates(store: Store, stackId: Buffer | undefined): DedupState[] {
  const states: DedupState[] = [];
  const stacks = new Map(listLayerStacks(store).map((s) => [toHex(s.id), s.name]));
  for (const l of listLayers(store, stackId)) states.push({ kind: 'layer', id: toHex(l.id), rootId: l.rootId, label: `${stacks.get(toHex(l.layerStackId))}#${l.seq}` });
  const seenCommits = new Set<string>();
  const kept = keptCommits(store);
  for (const b of listBranches(store, stackId)) {
    for (const c of branchLog(store, b).reverse()) {
      const id = toHex(c.id);
      if (seenCommits.has(id) || !kept.has(id)) continue;
      seenCommits.add(id);
      states.push({ kind: 'commit', id, rootId: c.rootId, label: `${b.name}@${id.slice(0, 12)}` });
    }
  }
  return states;
}

export function analyzeDedup(store: Store, opts: { layerStack?: string; top?: number }): DedupAnalysis {
  return store.read(() => {
    const stackId = opts.layerStack !== undefined ? resolveLayerStack(store, opts.layerStack).id : undefined;
    const states = dedupStates(store, stackId);
    const byRoot = new Map<string, string>();
    const r = analyze(store, states, info(store).fileBytes, opts.top ?? 10);
    for (const s of states) byRoot.set(`${s.kind}:${s.id}`, s.label);
    const perBranch = new Map<string, { logicalBytes: number; newBytes: number }>();
    for (const u of r.states) {
      const label = byRoot.get(`${u.kind}:${u.id}`) ?? '';
      const branch = u.kind === 'commit' ? label.split('@')[0]! : `layerstack ${label.split('#')[0]}`;
      const agg = perBranch.get(branch) ?? { logicalBytes: 0, newBytes: 0 };
      agg.logicalBytes += u.logicalBytes;
      agg.newBytes += u.newBytes;
      perBranch.set(branch, agg);
    }
    const rootOf = new Map(states.map((s) => [`${s.kind}:${s.id}`, s.rootId]));
    return {
      ...r,
      states: r.states.map((u) => ({ ...u, label: byRoot.get(`${u.kind}:${u.id}`) ?? '' })),
      branches: [...perBranch.entries()].map(([name, v]) => ({ name, ...v, dedupRatio: v.newBytes ? v.logicalBytes / v.newBytes : 0 })),
      largest: r.largest.map((c) => {
        const path = store.view(rootOf.get(c.state)!).pathOf(c.serial);
        return { ...c, label: byRoot.get(c.state) ?? '', path: path ? path.toString('utf8') : '' };
      }),
    };
  });
}
