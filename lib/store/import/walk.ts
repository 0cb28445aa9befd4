/**
 * Directory walk for import: names are bytes (non-UTF-8 names survive), siblings are visited in
 * byte order so serials and pages are deterministic for a given tree.
 */
import { readdirSync, type Dirent } from 'node:fs';
import { basename, dirname } from 'node:path';
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
    const list = readDirectory(dirPath);
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

/**
 * The same walk, stored compactly for large trees: names in one byte arena and numbers in typed
 * arrays instead of a Buffer and an object per entry (about 20 bytes per entry rather than
 * about 300), and each directory's children as one contiguous index range. Paths are rebuilt on
 * demand from the directory's path and the name.
 */
export class WalkTable {
  count = 0;
  private names = Buffer.allocUnsafe(1 << 16);
  private namesUsed = 0;
  private nameStart = new Uint32Array(1024);
  private nameLen = new Uint32Array(1024);
  private parents = new Int32Array(1024);
  /** Children of entry i are entries childStart[i] .. childEnd[i]-1 (an empty range if none). */
  private childStart = new Int32Array(1024);
  private childEnd = new Int32Array(1024);
  /** Paths of directories only; other paths are built from them. */
  private readonly dirPaths = new Map<number, Buffer>();

  private grow(): void {
    const n = this.parents.length * 2;
    const grown = <T extends Uint32Array | Int32Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(n);
      b.set(a);
      return b;
    };
    this.nameStart = grown(this.nameStart);
    this.nameLen = grown(this.nameLen);
    this.parents = grown(this.parents);
    this.childStart = grown(this.childStart);
    this.childEnd = grown(this.childEnd);
  }

  add(parent: number, name: Buffer): number {
    if (this.count === this.parents.length) this.grow();
    if (this.namesUsed + name.length > this.names.length) {
      const b = Buffer.allocUnsafe(Math.max(this.names.length * 2, this.namesUsed + name.length));
      this.names.copy(b, 0, 0, this.namesUsed);
      this.names = b;
    }
    const i = this.count++;
    name.copy(this.names, this.namesUsed);
    this.nameStart[i] = this.namesUsed;
    this.nameLen[i] = name.length;
    this.namesUsed += name.length;
    this.parents[i] = parent;
    this.childStart[i] = 0;
    this.childEnd[i] = 0;
    return i;
  }

  parent(i: number): number {
    return this.parents[i]!;
  }

  /** A view into the arena: valid until the next add(). */
  name(i: number): Buffer {
    return this.names.subarray(this.nameStart[i]!, this.nameStart[i]! + this.nameLen[i]!);
  }

  children(i: number): { start: number; end: number } {
    return { start: this.childStart[i]!, end: this.childEnd[i]! };
  }

  setChildren(i: number, start: number, end: number): void {
    this.childStart[i] = start;
    this.childEnd[i] = end;
  }

  setDirPath(i: number, path: Buffer): void {
    this.dirPaths.set(i, path);
  }

  path(i: number): Buffer {
    const own = this.dirPaths.get(i);
    if (own) return own;
    return Buffer.concat([this.dirPaths.get(this.parents[i]!)!, SLASH, this.name(i)]);
  }
}

/**
 * What an import leaves out. `paths`: absolute paths (the Store's own files and directory),
 * looked up once per directory; `exclude`: a predicate on the '/'-joined path relative to the
 * root (a directory's ends with '/'), as gitignore patterns match.
 */
export interface LeaveOut {
  paths?: string[];
  exclude?: (relPath: string) => boolean;
}

/** walkTree into a WalkTable: same entries in the same order, less what `leaveOut` names. */
export function walkTable(root: string, leaveOut: LeaveOut = {}): WalkTable {
  const byDir = new Map<string, Set<string>>();
  for (const p of leaveOut.paths ?? []) {
    const dir = dirname(p);
    if (!byDir.has(dir)) byDir.set(dir, new Set());
    byDir.get(dir)!.add(basename(p));
  }
  const exclude = leaveOut.exclude;
  const rel = new Map<number, string>([[0, '']]);
  const t = new WalkTable();
  t.add(-1, Buffer.alloc(0));
  t.setDirPath(0, Buffer.from(root));
  const stack = [0];
  while (stack.length > 0) {
    const index = stack.pop()!;
    const dirPath = t.path(index);
    let list = readDirectory(dirPath);
    const skip = byDir.get(dirPath.toString());
    if (skip) list = list.filter((d) => !skip.has(d.name.toString()));
    if (exclude) {
      const base = rel.get(index)!;
      list = list.filter((d) => !exclude(`${base}${d.name.toString()}${d.isDirectory() ? '/' : ''}`));
    }
    list.sort((a, b) => Buffer.compare(a.name, b.name));
    const start = t.count;
    const dirs: number[] = [];
    for (const d of list) {
      const i = t.add(index, d.name);
      if (d.isDirectory()) {
        t.setDirPath(i, Buffer.concat([dirPath, SLASH, d.name]));
        if (exclude) rel.set(i, `${rel.get(index)!}${d.name.toString()}/`);
        dirs.push(i);
      }
    }
    t.setChildren(index, start, t.count);
    for (let k = dirs.length - 1; k >= 0; k--) stack.push(dirs[k]!);
  }
  return t;
}

/** A directory's entries with their types, names as bytes; a failure is ERR_NATIVE_IO. */
function readDirectory(dirPath: Buffer): Dirent<Buffer>[] {
  try {
    return readdirSync(dirPath, { withFileTypes: true, encoding: 'buffer' });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new LayerFsError('ERR_NATIVE_IO', `cannot read directory ${dirPath.toString()}: ${err.code}`, { path: dirPath.toString(), errno: err.code });
  }
}
