/**
 * Removing a Workspace directory: iterative (a 2,000-deep tree overflows node's recursive
 * rmSync), never following a symlink out of the tree, and able to empty directories a state
 * made read-only.
 */
import { chmodSync, lstatSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';

function entriesOf(dir: Buffer): { name: Buffer; dir: boolean }[] {
  let list;
  try {
    list = readdirSync(dir, { withFileTypes: true, encoding: 'buffer' });
  } catch (e) {
    // Gone meanwhile (another process removing it too): nothing left to do there.
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    if ((e as NodeJS.ErrnoException).code !== 'EACCES') throw e;
    // A state may hold directories without read or search permission for their owner.
    chmodSync(dir, 0o700);
    list = readdirSync(dir, { withFileTypes: true, encoding: 'buffer' });
  }
  // Dirent types come from lstat where the file system gives none: a symlink is never a dir here.
  return list.map((d) => ({ name: Buffer.concat([dir, Buffer.from('/'), d.name as unknown as Buffer]), dir: d.isDirectory() }));
}

function unlinkEntry(path: Buffer, parent: Buffer): void {
  try {
    unlinkSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    if ((e as NodeJS.ErrnoException).code !== 'EACCES') throw e;
    chmodSync(parent, 0o700);
    unlinkSync(path);
  }
}

/** Removes `dir` and everything under it (depth-first, with an explicit stack). A missing `dir` is fine. */
export function removeTree(dir: string | Buffer): void {
  const root = Buffer.isBuffer(dir) ? dir : Buffer.from(dir);
  try {
    if (!lstatSync(root).isDirectory()) {
      unlinkSync(root);
      return;
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  // Each frame: a directory and whether its children were pushed already.
  const stack: { path: Buffer; parent: Buffer | null; expanded: boolean }[] = [{ path: root, parent: null, expanded: false }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (!top.expanded) {
      top.expanded = true;
      for (const e of entriesOf(top.path)) {
        if (e.dir) stack.push({ path: e.name, parent: top.path, expanded: false });
        else unlinkEntry(e.name, top.path);
      }
      continue;
    }
    stack.pop();
    try {
      rmdirSync(top.path);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      if (code !== 'EACCES' || !top.parent) throw e;
      chmodSync(top.parent, 0o700);
      rmdirSync(top.path);
    }
  }
}
