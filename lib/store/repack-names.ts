/**
 * The names a repack's delta selection (repack-bases.ts) sorts small objects by: the paths at
 * which the Store's states hold each small file's content. The store tier knows no history, so
 * the states are the Store's root objects themselves (every state ever written, kept or not: a
 * name is only a hint, never a reference), walked until a budget of entries is spent.
 */
import { LayerFsError } from '../errors.js';
import type { StoreAccess as Store } from './access.js';
import { ObjectKind } from './object-id.js';
import { PageStore } from './page-io.js';
import { ContentForm, InodeKind } from './tree/inode.js';
import { ROOT_SERIAL } from './tree/root.js';
import { FsView } from './tree/view.js';

/** Directory entries a name walk visits at most, over all states: bounds its time and memory. */
export const NAME_ENTRIES_MAX = 2_000_000;
/** States walked at most (the newest rows' roots first). */
export const NAME_STATES_MAX = 256;

export interface Names {
  /** A path (the first found) of each small file's content, by object id (latin1). */
  pathOf: Map<string, string>;
  /** Every content a path held in the walked states, by path: the versions of one file. */
  versions: Map<string, Buffer[]>;
}

/** Paths of the small file contents in the Store's states (module comment). */
export function collectNames(store: Store): Names {
  const names: Names = { pathOf: new Map(), versions: new Map() };
  const roots = store.read(
    () => store.db.prepare('SELECT id FROM objects WHERE kind = ? ORDER BY pack DESC LIMIT ?').pluck().all(ObjectKind.Root, NAME_STATES_MAX) as Buffer[],
  );
  const pages = new PageStore(store.objects);
  let budget = NAME_ENTRIES_MAX;
  const seenRoot = new Set<string>();
  for (const root of roots) {
    if (budget <= 0) break;
    if (seenRoot.has(root.toString('latin1'))) continue;
    seenRoot.add(root.toString('latin1'));
    try {
      budget = walkState(new FsView(root, store.objects, pages), names, budget);
    } catch (e) {
      // A damaged state names nothing: verify reports it, and names are only hints.
      if (!(e instanceof LayerFsError)) throw e;
    }
  }
  return names;
}

/** Adds the small files of one state to `names`; returns what is left of the budget. */
function walkState(view: FsView, names: Names, budget: number): number {
  const stack: [number, string][] = [[ROOT_SERIAL, '']];
  const seenDir = new Set<number>();
  while (stack.length > 0 && budget > 0) {
    const [serial, dirPath] = stack.pop()!;
    if (seenDir.has(serial)) continue;
    seenDir.add(serial);
    const dir = view.inode(serial);
    for (const e of view.readdir(dir)) {
      if (--budget <= 0) break;
      const inode = view.inode(e.serial);
      const p = `${dirPath}/${e.name.toString('latin1')}`;
      if (inode.kind === InodeKind.Dir) stack.push([e.serial, p]);
      else if (inode.kind === InodeKind.File && inode.form === ContentForm.Whole && inode.content) addVersion(names, p, inode.content);
    }
  }
  return budget;
}

function addVersion(names: Names, p: string, id: Buffer): void {
  const key = id.toString('latin1');
  if (!names.pathOf.has(key)) names.pathOf.set(key, p);
  const l = names.versions.get(p);
  if (!l) names.versions.set(p, [id]);
  else if (!l.some((x) => x.equals(id))) l.push(id);
}
