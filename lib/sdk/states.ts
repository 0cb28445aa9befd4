/**
 * Reading and creating states: LayerStacks and their Layers, the entries and file content of any
 * state (a StateRef), exports, and new LayerStacks from a directory or a tar stream.
 */
import { LayerFsError } from '../errors.js';
import { getLayerStack, resolveLayer } from '../history/layerstacks.js';
import { initLayerStack as initStack } from '../history/layerstack-init.js';
import type { LayerRow } from '../history/rows.js';
import { exportTree, type ExportProgress } from '../store/export.js';
import type { ByteRange } from '../store/read-range.js';
import type { ImportProgress } from '../store/import/import.js';
import type { TarSource } from '../store/import/tar-extract.js';
import { withExtractedTar } from './archive.js';
import type { ClientContext } from './context.js';
import { layerInfo, layerStackInfo } from './convert.js';
import * as read from './read.js';
import type { StateRef } from './read.js';
import type { EntryInfo, ExportReceipt, InitReceipt, LayerInfo, LayerStackInfo } from './types.js';

export interface InitLayerStackOptions {
  name: string;
  /** Directory to import as the genesis Layer; omit (or pass `empty: true`) for an empty one. */
  source?: string;
  empty?: boolean;
  /**
   * gitignore patterns to leave out (`['node_modules/', '*.log']`), after those of the source's
   * `.layerfsignore`. The Store's own files are always left out.
   */
  exclude?: string[];
  onProgress?: (p: ImportProgress) => void;
}

export type { StateRef } from './read.js';

export async function initLayerStack(ctx: ClientContext, opts: InitLayerStackOptions): Promise<InitReceipt> {
  if (opts.source !== undefined && opts.empty) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give either a source directory or empty, not both');
  if (opts.source === undefined && opts.empty === false) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give a source directory, or empty: true');
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const r = await initStack(ctx.store, { name: opts.name, source: opts.source, exclude: opts.exclude, onProgress: opts.onProgress });
  const im = r.import;
  const base = ctx.receipt('layerstack.init', 'Created', t0, a0, r.write, im ? im.phases : { walkRead: 0, chunkHash: 0, write: 0 });
  return ctx.monitor.record({
    ...base,
    outcome: 'Created',
    layerStack: layerStackInfo(r.layerStack),
    layer: layerInfo(r.layer, r.layerStack.name),
    files: im?.files ?? 0,
    directories: im ? im.directories : 1, // the root counts once: the import counts it as a directory it walked
    symlinks: im?.symlinks ?? 0,
    specials: im?.specials ?? 0,
    hardLinks: im?.hardLinks ?? 0,
    bytes: im?.bytes ?? 0,
    skipped: im?.skipped ?? [],
  } as InitReceipt) as InitReceipt;
}

export async function initLayerStackFromTar(ctx: ClientContext, opts: { name: string; tar: TarSource; onProgress?: (p: ImportProgress) => void }): Promise<InitReceipt> {
  if (layerStacks(ctx).some((s) => s.name === opts.name)) throw new LayerFsError('ERR_NAME_TAKEN', `a LayerStack named ${opts.name} already exists`, { name: opts.name, hint: 'choose another name' });
  return withExtractedTar(ctx.store, opts.tar, (dir) => initLayerStack(ctx, { name: opts.name, source: dir, onProgress: opts.onProgress }));
}

export function layerStacks(ctx: ClientContext): LayerStackInfo[] {
  return read.layerStacks(ctx.store);
}

export function layers(ctx: ClientContext, opts: { layerStack?: string }): LayerInfo[] {
  return read.layers(ctx.store, opts);
}

export function layerRow(ctx: ClientContext, ref: string): LayerRow {
  const l = resolveLayer(ctx.store, ref);
  if (!l) throw new LayerFsError('ERR_NOT_FOUND', `no Layer or LayerStack matches ${JSON.stringify(ref)}`, { id: ref, hint: 'list Layers with `layerfs query layers`' });
  return l;
}

export function layer(ctx: ClientContext, ref: StateRef): LayerInfo {
  const l = layerRow(ctx, ref);
  return layerInfo(l, getLayerStack(ctx.store, l.layerStackId)?.name ?? '');
}

/** The root of a state. */
export function stateRoot(ctx: ClientContext, ref: StateRef): Buffer {
  return read.stateRoot(ctx.store, ref);
}

export function ls(ctx: ClientContext, ref: StateRef, path?: string | Buffer): EntryInfo[] {
  return read.ls(ctx.store, ref, path);
}

export function stat(ctx: ClientContext, ref: StateRef, path?: string | Buffer): EntryInfo {
  return read.stat(ctx.store, ref, path);
}

export function readFile(ctx: ClientContext, ref: StateRef, path: string | Buffer, range?: ByteRange): Generator<Buffer> {
  return read.readFile(ctx.store, ref, path, range);
}

export function exportState(ctx: ClientContext, ref: StateRef, target: string, opts: { onProgress?: (p: ExportProgress) => void }): ExportReceipt {
  const t0 = performance.now();
  const s = ctx.store.read(() => exportTree(ctx.store.view(read.stateRoot(ctx.store, ref)), target, { onProgress: opts.onProgress }));
  const base = ctx.receipt('export', 'Exported', t0, ctx.store.meter.allocatedGrowth, null);
  return ctx.monitor.record({ ...base, outcome: 'Exported', target, ...s } as ExportReceipt) as ExportReceipt;
}
