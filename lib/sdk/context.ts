/**
 * What every area of the Client works with: its Store, its Monitor, where executions keep their
 * state, and how a receipt is measured. The Client is a thin class over the area modules, each a
 * set of functions taking this context (as better-sqlite3 attaches lib/methods/*).
 */
import type { Monitor, Receipt } from '../monitor/monitor.js';
import type { Store } from '../store/store.js';
import type { WriteStats } from '../store/objects.js';
import { executionsDir, type CommitPhases } from '../workspace/index.js';

export interface ClientContext {
  readonly store: Store;
  readonly monitor: Monitor;
  /** `<store>.d/executions`: execution records and output. */
  readonly stateDir: string;
  receipt(operation: string, outcome: string, t0: number, allocated0: number, w: WriteStats | null, phases?: CommitPhases): Receipt;
}

export function clientContext(store: Store, monitor: Monitor): ClientContext {
  return { store, monitor, stateDir: executionsDir(store.path), receipt: (...args) => receipt(store, ...args) };
}

/**
 * `allocated0` is `store.meter.allocatedGrowth` before the operation: allocated growth is
 * summed over this handle's own write transactions, each measured under its write lock.
 * Given `phases` (walkRead, chunkHash, write), publish is the rest of the wall time, so the
 * four phases add up to `ms`.
 */
function receipt(store: Store, operation: string, outcome: string, t0: number, allocated0: number, w: WriteStats | null, phases?: CommitPhases): Receipt {
  const s = w ?? { objectsInserted: 0, objectsReused: 0, bytesInserted: 0, bytesReused: 0 };
  const ms = performance.now() - t0;
  return {
    operation,
    outcome,
    ms,
    phases: phases ? { ...phases, publish: Math.max(0, ms - phases.walkRead - phases.chunkHash - phases.write) } : {},
    ...s,
    semanticGrowth: s.bytesInserted,
    allocatedGrowth: store.meter.allocatedGrowth - allocated0,
  };
}
