/**
 * A new LayerStack: its genesis Layer, empty or imported from a directory (apart from the rows of
 * layerstacks.ts so that reading a state never loads the import).
 */
import { LayerFsError } from '../errors.js';
import { checkName } from '../format/names.js';
import { buildNamespace, importTree, type ImportProgress, type ImportStats } from '../store/import/import.js';
import { ContentForm, InodeKind, type Inode } from '../store/tree/inode.js';
import { excludeMatcher } from '../store/import/excludes.js';
import type { Store } from '../store/store.js';
import type { WriteStats } from '../store/objects.js';
import { getLayer, getLayerStack, layerStackByName, publishGenesisLayer } from './layerstacks.js';
import type { LayerRow, LayerStackRow } from './rows.js';

export interface InitResult {
  layerStack: LayerStackRow;
  layer: LayerRow;
  import: ImportStats | null;
  write: WriteStats;
}

export interface InitOptions {
  name: string;
  /** A directory to import; omitted for an empty genesis Layer. */
  source?: string;
  /** gitignore patterns to leave out, after those of the source's `.layerfsignore`. */
  exclude?: string[];
  onProgress?: (p: ImportProgress) => void;
}

function emptyRootDir(): Inode {
  return {
    kind: InodeKind.Dir,
    mode: 0o755,
    uid: process.getuid?.() ?? 0,
    gid: process.getgid?.() ?? 0,
    mtimeNs: 0n,
    size: 0,
    nlink: 1,
    form: ContentForm.None,
    content: null,
    xattrs: [],
  };
}

export async function initLayerStack(store: Store, opts: InitOptions): Promise<InitResult> {
  const name = checkName(opts.name, 'LayerStack');
  const taken = () => layerStackByName(store, name) !== undefined;
  if (taken()) throw new LayerFsError('ERR_NAME_TAKEN', `a LayerStack named ${name} already exists`, { name, hint: 'choose another name' });
  let importStats: ImportStats | null = null;
  let writeStats: WriteStats | null = null;
  const result = await store.write(async (w) => {
    let rootId: Buffer;
    if (opts.source !== undefined) {
      const exclude = excludeMatcher(opts.source, opts.exclude);
      const r = await importTree(opts.source, w, store.pages, { forbidden: store.files, exclude, onProgress: opts.onProgress });
      rootId = r.rootId;
      importStats = r.stats;
    } else {
      rootId = buildNamespace(new Map([[1, emptyRootDir()]]), new Map(), w, store.pages);
    }
    // Checked again under the write lock: another process may have taken the name meanwhile.
    if (taken()) throw new LayerFsError('ERR_NAME_TAKEN', `a LayerStack named ${name} already exists`, { name, hint: 'choose another name' });
    const published = publishGenesisLayer(store, name, rootId);
    writeStats = { ...w.stats };
    return published;
  });
  return { layerStack: getLayerStack(store, result.stackId)!, layer: getLayer(store, result.id)!, import: importStats, write: writeStats! };
}
