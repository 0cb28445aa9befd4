/**
 * Writing into a Workspace on behalf of an agent, never outside it: the relative path may not be
 * absolute or climb out with `..`, every directory on the way must resolve (symlinks followed)
 * to a directory inside the Workspace, and the file itself is opened with O_NOFOLLOW, so a
 * symlink planted in the Workspace cannot redirect a write anywhere else.
 */
import { constants, lstatSync, mkdirSync, openSync, closeSync, readFileSync, realpathSync, writeSync, ftruncateSync, fstatSync, unlinkSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize, relative, sep } from 'node:path';
import { LayerFsError } from '../../sdk/index.js';

function unsafe(path: string, why: string): LayerFsError {
  return new LayerFsError('ERR_UNSAFE_PATH', `${JSON.stringify(path)} ${why}`, { path, hint: 'give a path relative to the Workspace root that stays inside it' });
}

function inside(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
}

/** The absolute target of `rel` in the Workspace at `root`, its parent directories created safely. */
export function safeTarget(root: string, rel: string, create: boolean): string {
  if (typeof rel !== 'string' || rel === '' || rel.includes('\0')) throw unsafe(String(rel), 'is not a usable path');
  if (isAbsolute(rel)) throw unsafe(rel, 'is absolute');
  const norm = normalize(rel);
  if (norm === '..' || norm.startsWith(`..${sep}`) || norm === '.') throw unsafe(rel, 'leaves the Workspace or names its root');
  const realRoot = realpathSync(root);
  const target = join(realRoot, norm);
  // Walk down from the root: every existing directory must resolve inside the Workspace.
  let dir = realRoot;
  const parts = dirname(norm) === '.' ? [] : dirname(norm).split(sep);
  for (const part of parts) {
    const next = join(dir, part);
    let st;
    try {
      st = lstatSync(next);
    } catch {
      if (!create) throw new LayerFsError('ERR_NOT_FOUND', `no directory ${relative(realRoot, next)} in the Workspace`, { path: rel });
      mkdirSync(next);
      st = lstatSync(next);
    }
    const real = st.isSymbolicLink() ? realpathSync(next) : next;
    if (!inside(realRoot, real)) throw unsafe(rel, `goes through a symlink out of the Workspace (${relative(realRoot, next)})`);
    if (!lstatSync(real).isDirectory()) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `${relative(realRoot, next)} is not a directory`, { path: rel });
    dir = real;
  }
  return join(dir, target.slice(target.lastIndexOf(sep) + 1));
}

function openNoFollow(path: string, rel: string, flags: number, mode?: number): number {
  try {
    return openSync(path, flags | constants.O_NOFOLLOW, mode);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') throw unsafe(rel, 'is a symlink; file tools never follow one');
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new LayerFsError('ERR_NOT_FOUND', `no file ${rel} in the Workspace`, { path: rel, hint: 'write_file creates files' });
    if ((e as NodeJS.ErrnoException).code === 'EISDIR') throw new LayerFsError('ERR_INVALID_ARGUMENT', `${rel} is a directory`, { path: rel });
    throw e;
  }
}

/** Writes (creates or replaces) a file; returns the bytes written. */
export function writeInWorkspace(root: string, rel: string, content: Buffer, mode?: number): number {
  const target = safeTarget(root, rel, true);
  const fd = openNoFollow(target, rel, constants.O_WRONLY | constants.O_CREAT, mode ?? 0o644);
  try {
    if (!fstatSync(fd).isFile()) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${rel} is not a regular file`, { path: rel });
    ftruncateSync(fd, 0);
    let off = 0;
    while (off < content.length) off += writeSync(fd, content, off, content.length - off, off);
  } finally {
    closeSync(fd);
  }
  return content.length;
}

export function readInWorkspace(root: string, rel: string): Buffer {
  const target = safeTarget(root, rel, false);
  const fd = openNoFollow(target, rel, constants.O_RDONLY);
  try {
    if (!fstatSync(fd).isFile()) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${rel} is not a regular file`, { path: rel });
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function deleteInWorkspace(root: string, rel: string): void {
  const target = safeTarget(root, rel, false);
  try {
    unlinkSync(target); // unlink never follows: a symlink itself is removed
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new LayerFsError('ERR_NOT_FOUND', `no file ${rel} in the Workspace`, { path: rel });
    throw e;
  }
}

export interface Edit {
  old_text: string;
  new_text: string;
}

/** Applies exact-text replacements in order; each old_text must occur exactly once. */
export function patchInWorkspace(root: string, rel: string, edits: Edit[]): { replacements: number; bytes: number } {
  let text = readInWorkspace(root, rel).toString('utf8');
  edits.forEach((e, i) => {
    if (e.old_text === '') throw new LayerFsError('ERR_INVALID_ARGUMENT', `edit ${i}: old_text is empty`, { path: rel, hint: 'quote the exact text to replace' });
    const at = text.indexOf(e.old_text);
    if (at < 0) throw new LayerFsError('ERR_NOT_FOUND', `edit ${i}: old_text does not occur in ${rel}`, { path: rel, hint: 'read the file again and quote its text exactly' });
    if (text.indexOf(e.old_text, at + 1) >= 0) throw new LayerFsError('ERR_AMBIGUOUS_ID', `edit ${i}: old_text occurs more than once in ${rel}`, { path: rel, hint: 'include more surrounding lines so it is unique' });
    text = text.slice(0, at) + e.new_text + text.slice(at + e.old_text.length);
  });
  const bytes = writeInWorkspace(root, rel, Buffer.from(text, 'utf8'));
  return { replacements: edits.length, bytes };
}
