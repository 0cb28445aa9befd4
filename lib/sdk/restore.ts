/**
 * restore: makes paths of a Workspace what they are in some state (`git restore --source`):
 * every file, symlink and directory at or below each path is written, re-moded or removed so
 * that the subtree equals the source's; a path the source lacks is removed. Files are written
 * atomically (temporary name, rename) with the source's mtime.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { InodeKind } from '../store/tree/inode.js';
import type { FsView } from '../store/tree/view.js';
import type { Store } from '../store/store.js';
import { diskNode, safePath, sameContent, stateNode, writeSteps, type Step } from './apply.js';
import { inodeAt } from './patch.js';
import { splitStatePath } from './paths.js';

export interface RestoreResult {
  /** What was written, re-moded or removed, by path. */
  changes: { path: string; change: 'write' | 'remove' | 'mkdir' | 'chmod' }[];
}

const join = (a: Buffer, b: Buffer): Buffer => (a.length ? Buffer.concat([a, Buffer.from('/'), b]) : b);

function stateSubtree(view: FsView, path: Buffer, out: Map<string, Buffer>): void {
  const inode = inodeAt(view, path);
  if (!inode) return;
  if (path.length) out.set(path.toString('latin1'), path);
  if (inode.kind !== InodeKind.Dir) return;
  for (const e of view.readdir(inode)) stateSubtree(view, join(path, e.name), out);
}

function diskSubtree(root: Buffer, path: Buffer, out: Map<string, Buffer>): void {
  const abs = path.length ? Buffer.concat([root, Buffer.from('/'), path]) : root;
  let st;
  try {
    st = lstatSync(abs);
  } catch {
    return;
  }
  if (path.length) out.set(path.toString('latin1'), path);
  if (!st.isDirectory()) return;
  for (const name of readdirSync(abs, { encoding: 'buffer' })) diskSubtree(root, join(path, name), out);
}

/** Restores `paths` (relative; '' or '.' is everything) of the directory `dir` from the state `sourceRoot`. */
export function restorePaths(store: Store, sourceRoot: Buffer, dir: string, paths: string[]): RestoreResult {
  if (paths.length === 0) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give at least one path to restore', { hint: "pass '.' to restore everything" });
  const root = Buffer.from(dir);
  const view = store.view(sourceRoot);
  const all = new Map<string, Buffer>();
  for (const p of paths) {
    const path = Buffer.from(splitStatePath(p).map((x) => x.toString('latin1')).join('/'), 'latin1');
    const before = all.size;
    stateSubtree(view, path, all);
    if (path.length) safePath(root, path);
    diskSubtree(root, path, all);
    if (inodeAt(view, path) === undefined && all.size === before) throw new LayerFsError('ERR_NOT_FOUND', `${p} is neither in the source state nor in the Workspace`, { path: p });
  }
  const steps: Step[] = [];
  for (const path of all.values()) {
    const want = stateNode(view, path);
    if (want.kind === 'special') continue;
    const abs = safePath(root, path);
    const disk = diskNode(abs);
    if (sameContent(disk, want) && (want.kind === 'absent' || want.kind === 'symlink' || disk.mode === want.mode)) continue;
    steps.push({ path, abs, want, disk });
  }
  const r: RestoreResult & { kept: string[] } = { changes: [], kept: [] };
  writeSteps(steps, r, true);
  return { changes: r.changes };
}
