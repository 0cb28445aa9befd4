/** User extended attributes, never following symlinks (l*xattr). Synchronous: each is one syscall. */
import { invalidArgument } from '../errors.js';
import { native } from './binding.js';
import { checkBytes, checkString, displayPath, toPathBuffer } from './params.js';
import { callNative } from './wrap.js';

export interface XattrEntry {
  name: string;
  value: Buffer;
}

export function setXattr(path: string | Uint8Array, name: string, value: Uint8Array | string): void {
  const p = toPathBuffer(path, 'path');
  checkString(name, 'name');
  const v = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  checkBytes(v, 'value');
  callNative(() => native.setXattr(p, name, v), { path: displayPath(path) });
}

export function removeXattr(path: string | Uint8Array, name: string): void {
  const p = toPathBuffer(path, 'path');
  checkString(name, 'name');
  callNative(() => native.removeXattr(p, name), { path: displayPath(path) });
}

/** The user.* attributes with their values, in the order the file system lists them. */
export function getXattrs(path: string | Uint8Array): XattrEntry[] {
  const p = toPathBuffer(path, 'path');
  return callNative(() => native.getXattrs(p), { path: displayPath(path) });
}

/** Every attribute name, all namespaces (user., security., trusted., system.). */
export function listXattrs(path: string | Uint8Array): string[] {
  const p = toPathBuffer(path, 'path');
  return callNative(() => native.listXattrs(p), { path: displayPath(path) });
}

/** Sets access and modification times with nanosecond precision, never following a symlink. */
export function setTimes(path: string | Uint8Array, atimeNs: bigint, mtimeNs: bigint): void {
  const p = toPathBuffer(path, 'path');
  if (typeof atimeNs !== 'bigint' || typeof mtimeNs !== 'bigint') throw invalidArgument('times must be bigint nanoseconds', { argument: 'mtimeNs' });
  callNative(() => native.setTimes(p, atimeNs, mtimeNs), { path: displayPath(path) });
}
