// The layerfs side of the import cells: load the SDK and time "create a Store, import a directory
// as the genesis Layer". The SDK is imported through a computed URL so this file type-checks and
// the cells fail with a clean error row (rather than a compile error) while lib/sdk is not there.
// SdkShape below is the API these cells rely on; keep it in step with docs/SDK.md.

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

/** The receipt's figures sit either at top level (InitReceipt extends Receipt) or under
 * `.receipt`; both are read. */
interface InitResult {
  layerStack?: { id?: string; name?: string };
  layer?: { id?: string };
  receipt?: Record<string, unknown>;
  [more: string]: unknown;
}
interface SdkClient {
  initLayerStack(opts: { name: string; source: string }): Promise<InitResult>;
  close(): void | Promise<void>;
}
interface SdkShape {
  Client: { create(storePath: string): SdkClient | Promise<SdkClient> };
}

const SDK_URL = new URL('../../lib/sdk/index.js', import.meta.url);

export async function loadSdk(): Promise<SdkShape> {
  const mod = (await import(SDK_URL.href)) as Partial<SdkShape>;
  if (typeof mod.Client?.create !== 'function') throw new Error(`${SDK_URL.pathname}: no Client.create export`);
  return mod as SdkShape;
}

export interface ImportMeasure {
  /** Wall time of Client.create + initLayerStack. */
  ms: number;
  /** Wall time of client.close() (may checkpoint the WAL), reported apart. */
  closeMs: number;
  /** Store file + its -wal after close. */
  storeBytes: number;
  /** Disk blocks allocated to Store + WAL. */
  allocatedBytes: number;
  files?: number;
  bytes?: number;
  objects?: number;
  objectsReused?: number;
  receiptMs?: number;
  /** Other receipt figures worth keeping in the results JSON (phases, byte counts, outcome). */
  receipt: Record<string, unknown>;
}

const KEEP = ['outcome', 'phases', 'bytesInserted', 'bytesReused', 'semanticGrowth', 'allocatedGrowth', 'directories'];

function num(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}

function fileSize(p: string, allocated = false): number {
  try {
    const st = fs.statSync(p);
    return allocated ? st.blocks * 512 : st.size;
  } catch {
    return 0;
  }
}

/** Creates a new Store at `<tmp>/bench.layerfs` and imports `source` into LayerStack "bench". */
export async function measureInit(sdk: SdkShape, source: string, tmp: string): Promise<ImportMeasure> {
  const storePath = path.join(tmp, 'bench.layerfs');
  const t0 = performance.now();
  const client = await sdk.Client.create(storePath);
  let result: InitResult;
  try {
    result = await client.initLayerStack({ name: 'bench', source });
  } catch (err) {
    await client.close();
    throw err;
  }
  const ms = performance.now() - t0;
  const t1 = performance.now();
  await client.close();
  const closeMs = performance.now() - t1;
  const receipt: Record<string, unknown> =
    result.receipt !== null && typeof result.receipt === 'object' ? result.receipt : result;
  return {
    ms,
    closeMs,
    storeBytes: fileSize(storePath) + fileSize(`${storePath}-wal`),
    allocatedBytes: fileSize(storePath, true) + fileSize(`${storePath}-wal`, true),
    files: num(receipt.files),
    bytes: num(receipt.bytes),
    objects: num(receipt.objectsInserted),
    objectsReused: num(receipt.objectsReused),
    receiptMs: num(receipt.ms),
    receipt: Object.fromEntries(KEEP.filter((k) => receipt[k] !== undefined).map((k) => [k, receipt[k]])),
  };
}
