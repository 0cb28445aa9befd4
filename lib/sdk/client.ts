/**
 * Client: the public API. One Client binds one Store and one Monitor. Every mutating operation
 * returns a typed receipt; failures are LayerFsError with a stable `code`.
 */
import { statSync } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import {
  getLayerStack,
  initLayerStack,
  listLayers,
  listLayerStacks,
  resolveLayer,
  resolveLayerStack,
  type LayerRow,
} from '../history/index.js';
import { Monitor, type Receipt } from '../monitor/receipt.js';
import { exportTree, InodeKind, Store, verifyStore, type ImportProgress, type WriteStats } from '../store/index.js';
import { entryInfo, layerInfo, layerStackInfo } from './convert.js';
import { splitStatePath } from './paths.js';
import type { EntryInfo, ExportReceipt, InitReceipt, LayerInfo, LayerStackInfo, StoreInfoResult, VerifyResult } from './types.js';

export interface InitLayerStackOptions {
  name: string;
  /** Directory to import as the genesis Layer; omit (or pass `empty: true`) for an empty one. */
  source?: string;
  empty?: boolean;
  onProgress?: (p: ImportProgress) => void;
}

/** A state reference: a Layer id (or unambiguous prefix), or a LayerStack name for its head. */
export type StateRef = string;

interface ResolvedState {
  kind: 'layer';
  id: Buffer;
  rootId: Buffer;
}

export class Client {
  readonly monitor = new Monitor();

  private constructor(private readonly store: Store) {}

  /** Creates a new Store file (refusing an existing path) and connects to it. */
  static create(path: string): Client {
    return new Client(Store.create(path));
  }

  /** Connects to an existing Store, checking that it is a Store of a supported format. */
  static connect(path: string, opts: { readonly?: boolean } = {}): Client {
    return new Client(Store.open(path, opts));
  }

  get storePath(): string {
    return this.store.path;
  }

  info(): StoreInfoResult {
    const c = this.store.counts();
    let fileBytes = 0;
    for (const f of [this.store.path, `${this.store.path}-wal`]) {
      try {
        fileBytes += statSync(f).size;
      } catch {
        /* no WAL right now */
      }
    }
    return {
      path: this.store.path,
      formatVersion: this.store.info.formatVersion,
      storeId: this.store.info.storeId,
      createdAt: new Date(this.store.info.createdMs).toISOString(),
      layerStacks: c.layerStacks,
      layers: c.layers,
      objects: c.objects,
      fileBytes,
    };
  }

  private receipt(operation: string, outcome: string, t0: number, allocated0: number, w: WriteStats | null, phases: Record<string, number> = {}): Receipt {
    const s = w ?? { objectsInserted: 0, objectsReused: 0, bytesInserted: 0, bytesReused: 0 };
    return {
      operation,
      outcome,
      ms: performance.now() - t0,
      phases,
      ...s,
      semanticGrowth: s.bytesInserted,
      allocatedGrowth: this.store.allocatedBytes() - allocated0,
    };
  }

  async initLayerStack(opts: InitLayerStackOptions): Promise<InitReceipt> {
    if (opts.source !== undefined && opts.empty) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give either a source directory or empty, not both');
    if (opts.source === undefined && opts.empty === false) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give a source directory, or empty: true');
    const t0 = performance.now();
    const a0 = this.store.allocatedBytes();
    const r = await initLayerStack(this.store, { name: opts.name, source: opts.source, onProgress: opts.onProgress });
    const im = r.import;
    const base = this.receipt('layerstack.init', 'Created', t0, a0, r.write, im ? { ...im.phases } : {});
    return this.monitor.record({
      ...base,
      outcome: 'Created',
      layerStack: layerStackInfo(r.layerStack),
      layer: layerInfo(r.layer, r.layerStack.name),
      files: im?.files ?? 0,
      directories: (im?.directories ?? 0) + 1,
      symlinks: im?.symlinks ?? 0,
      specials: im?.specials ?? 0,
      hardLinks: im?.hardLinks ?? 0,
      bytes: im?.bytes ?? 0,
      skipped: im?.skipped ?? [],
    } as InitReceipt) as InitReceipt;
  }

  layerStacks(): LayerStackInfo[] {
    return listLayerStacks(this.store).map(layerStackInfo);
  }

  layers(opts: { layerStack?: string } = {}): LayerInfo[] {
    return this.store.read(() => {
      const names = new Map(listLayerStacks(this.store).map((s) => [toHex(s.id), s.name]));
      const stackId = opts.layerStack !== undefined ? resolveLayerStack(this.store, opts.layerStack).id : undefined;
      return listLayers(this.store, stackId).map((l) => layerInfo(l, names.get(toHex(l.layerStackId)) ?? ''));
    });
  }

  private layerRow(ref: string): LayerRow {
    const l = resolveLayer(this.store, ref);
    if (!l) throw new LayerFsError('ERR_NOT_FOUND', `no Layer or LayerStack matches ${JSON.stringify(ref)}`, { id: ref, hint: 'list Layers with `layerfs query layers`' });
    return l;
  }

  layer(ref: StateRef): LayerInfo {
    const l = this.layerRow(ref);
    return layerInfo(l, getLayerStack(this.store, l.layerStackId)?.name ?? '');
  }

  private state(ref: StateRef): ResolvedState {
    const l = this.layerRow(ref);
    return { kind: 'layer', id: l.id, rootId: l.rootId };
  }

  /** Lists a directory of a state (or describes a single non-directory entry). */
  ls(ref: StateRef, path?: string | Buffer): EntryInfo[] {
    return this.store.read(() => {
      const view = this.store.view(this.state(ref).rootId);
      const parts = splitStatePath(path);
      const { serial, inode } = view.resolve(parts, String(path ?? ''));
      if (inode.kind !== InodeKind.Dir) return [entryInfo(parts[parts.length - 1] ?? Buffer.alloc(0), serial, inode)];
      const out: EntryInfo[] = [];
      for (const e of view.readdir(inode)) out.push(entryInfo(e.name, e.serial, view.inode(e.serial)));
      return out;
    });
  }

  /** Describes one entry of a state. */
  stat(ref: StateRef, path?: string | Buffer): EntryInfo {
    return this.store.read(() => {
      const view = this.store.view(this.state(ref).rootId);
      const parts = splitStatePath(path);
      const { serial, inode } = view.resolve(parts, String(path ?? ''));
      return entryInfo(parts[parts.length - 1] ?? Buffer.alloc(0), serial, inode);
    });
  }

  /** The content of a regular file of a state, piece by piece (bounded memory for large files). */
  *readFile(ref: StateRef, path: string | Buffer): Generator<Buffer> {
    const view = this.store.view(this.state(ref).rootId);
    const display = String(path);
    const { inode } = view.resolve(splitStatePath(path), display);
    if (inode.kind !== InodeKind.File) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${display} is not a regular file`, { path: display });
    yield* view.content(inode);
  }

  cat(ref: StateRef, path: string | Buffer): Buffer {
    return Buffer.concat([...this.readFile(ref, path)]);
  }

  /** Writes a state into a new (or empty) directory. */
  export(ref: StateRef, target: string): ExportReceipt {
    const t0 = performance.now();
    const s = this.store.read(() => exportTree(this.store.view(this.state(ref).rootId), target));
    const base = this.receipt('export', 'Exported', t0, this.store.allocatedBytes(), null);
    return this.monitor.record({ ...base, outcome: 'Exported', target, ...s } as ExportReceipt) as ExportReceipt;
  }

  /** Re-reads and re-hashes everything reachable from every state. */
  verify(): VerifyResult {
    return this.store.read(() => {
      const states = listLayers(this.store).map((l) => ({ kind: 'layer', id: toHex(l.id), rootId: l.rootId }));
      const r = verifyStore(this.store, states);
      return { ...r };
    });
  }

  close(): void {
    this.store.close();
  }
}
