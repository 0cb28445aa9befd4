/** Whether a change between two states touches a path: what `log -- PATH` filters Commits by. */
import type { Store } from '../store/store.js';
import { diffStates, type DiffEntry } from './diff.js';

function under(path: string | undefined, prefix: string): boolean {
  if (path === undefined) return false;
  return prefix === '' || path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * True if any entry at or below `path` ('/'-joined, no leading slash) differs between the states.
 * The diff walks page trees, so the cost is that of the change, not of the tree.
 */
export function touchesPath(store: Store, fromRoot: Buffer, toRoot: Buffer, path: string): boolean {
  const prefix = path.replace(/^\/+|\/+$/g, '');
  let after: string | undefined;
  for (;;) {
    const page = diffStates(store, fromRoot, toRoot, { after, limit: 1000 });
    if (page.entries.some((e: DiffEntry) => under(e.path, prefix) || under(e.oldPath, prefix))) return true;
    if (!page.next) return false;
    after = page.next;
  }
}
