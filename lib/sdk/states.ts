/**
 * Reading and creating states: LayerStacks and their Layers, the entries and file content of any
 * state (a StateRef), exports, and new LayerStacks from a directory or a tar stream.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { getLayerStack, initLayerStack as initStack, listLayers, listLayerStacks, resolveLayer, resolveLayerStack, type LayerRow } from '../history/index.js';
import { exportTree, InodeKind, readRange, type ByteRange, type ExportProgress, type ImportProgress, type TarSource } from '../store/index.js';
import { withExtractedTar } from './archive.js';
import type { ClientContext } from './context.js';
import { entryInfo, layerInfo, layerStackInfo } from './convert.js';
import { splitStatePath } from './paths.js';
import { resolveState } from './refs.js';
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

/**
 * A state reference: a Layer or Commit id (or unambiguous prefix), a Branch name or id (its
 * current state), or a LayerStack name (its head Layer).
 */
export type StateRef = string;

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
  return listLayerStacks(ctx.store).map(layerStackInfo);
}

export function layers(ctx: ClientContext, opts: { layerStack?: string }): LayerInfo[] {
  const store = ctx.store;
  return store.read(() => {
    const names = new Map(listLayerStacks(store).map((s) => [toHex(s.id), s.name]));
    const stackId = opts.layerStack !== undefined ? resolveLayerStack(store, opts.layerStack).id : undefined;
    return listLayers(store, stackId).map((l) => layerInfo(l, names.get(toHex(l.layerStackId)) ?? ''));
  });
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
  return resolveState(ctx.store, ref).rootId;
}

export function ls(ctx: ClientContext, ref: StateRef, path?: string | Buffer): EntryInfo[] {
  return ctx.store.read(() => {
    const view = ctx.store.view(stateRoot(ctx, ref));
    const parts = splitStatePath(path);
    const { serial, inode } = view.resolve(parts, String(path ?? ''));
    if (inode.kind !== InodeKind.Dir) return [entryInfo(parts[parts.length - 1] ?? Buffer.alloc(0), serial, inode)];
    const out: EntryInfo[] = [];
    for (const e of view.readdir(inode)) out.push(entryInfo(e.name, e.serial, view.inode(e.serial)));
    return out;
  });
}

export function stat(ctx: ClientContext, ref: StateRef, path?: string | Buffer): EntryInfo {
  return ctx.store.read(() => {
    const view = ctx.store.view(stateRoot(ctx, ref));
    const parts = splitStatePath(path);
    const { serial, inode } = view.resolve(parts, String(path ?? ''));
    return entryInfo(parts[parts.length - 1] ?? Buffer.alloc(0), serial, inode);
  });
}

export function* readFile(ctx: ClientContext, ref: StateRef, path: string | Buffer, range?: ByteRange): Generator<Buffer> {
  const view = ctx.store.view(stateRoot(ctx, ref));
  const display = String(path);
  const { inode } = view.resolve(splitStatePath(path), display);
  if (inode.kind !== InodeKind.File) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${display} is not a regular file`, { path: display });
  if (range === undefined) yield* view.content(inode);
  else yield* readRange(ctx.store.objects, inode, range);
}

export function exportState(ctx: ClientContext, ref: StateRef, target: string, opts: { onProgress?: (p: ExportProgress) => void }): ExportReceipt {
  const t0 = performance.now();
  const s = ctx.store.read(() => exportTree(ctx.store.view(stateRoot(ctx, ref)), target, { onProgress: opts.onProgress }));
  const base = ctx.receipt('export', 'Exported', t0, ctx.store.meter.allocatedGrowth, null);
  return ctx.monitor.record({ ...base, outcome: 'Exported', target, ...s } as ExportReceipt) as ExportReceipt;
}
