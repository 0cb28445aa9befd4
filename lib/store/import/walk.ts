/**
 * Directory walk for import: names are bytes (non-UTF-8 names survive), siblings are visited in
 * byte order so serials and pages are deterministic for a given tree.
 */
import { readdirSync, type Dirent } from 'node:fs';
import { LayerFsError } from '../../errors.js';

export interface WalkEntry {
  path: Buffer;
  name: Buffer;
  /** Index of the parent directory's entry; -1 for the root. */
  parent: number;
}

const SLASH = Buffer.from('/');

export function walkTree(root: string): WalkEntry[] {
  const out: WalkEntry[] = [{ path: Buffer.from(root), name: Buffer.alloc(0), parent: -1 }];
  const stack = [0];
  while (stack.length > 0) {
    const index = stack.pop()!;
    const dirPath = out[index]!.path;
    let list: Dirent<Buffer>[];
    try {
      list = readdirSync(dirPath, { withFileTypes: true, encoding: 'buffer' });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      throw new LayerFsError('ERR_NATIVE_IO', `cannot read directory ${dirPath.toString()}: ${err.code}`, { path: dirPath.toString(), errno: err.code });
    }
    list.sort((a, b) => Buffer.compare(a.name, b.name));
    const dirs: number[] = [];
    for (const d of list) {
      const i = out.length;
      out.push({ path: Buffer.concat([dirPath, SLASH, d.name]), name: d.name, parent: index });
      if (d.isDirectory()) dirs.push(i);
    }
    // An explicit stack, not recursion: trees may be deeper than the JS stack.
    for (let k = dirs.length - 1; k >= 0; k--) stack.push(dirs[k]!);
  }
  return out;
}
