/**
 * The private per-Store state directory `<store>.d` and the files in it (receipts, daemon log,
 * daemon lock, Workspace markers). The directory may sit where other users can write (a Store in
 * /tmp), and root may use another user's Store, so nothing in it is trusted by name: the
 * directory must be a real directory owned by this user (or used by root) that no one else can
 * write, and each file is opened without following a symlink and checked to be a plain file of
 * its own (no FIFO, no hard link to somebody else's file) before a byte is written.
 */
import { closeSync, constants as fsc, fstatSync, lstatSync, mkdirSync, openSync } from 'node:fs';
import { LayerFsError } from '../errors.js';

function unsafe(path: string, why: string): LayerFsError {
  return new LayerFsError('ERR_UNSAFE_PATH', `refusing to use ${path}: ${why}`, { path, hint: 'a Store is usable by its owner and by root; remove the path if it is not yours, or use a Store in a directory others cannot write' });
}

function myUid(): number | undefined {
  return process.getuid?.();
}

/** Checks (creating it 0700 when absent) that `dir` is a private state directory this process may use. */
export function ensurePrivateDir(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') throw new LayerFsError('ERR_NATIVE_IO', `cannot create ${dir}: ${code}`, { path: dir, errno: code });
  }
  checkPrivateDir(dir);
}

/** Throws ERR_UNSAFE_PATH unless `dir` is a real directory, owned by this user (root may use any), that only its owner can write. */
export function checkPrivateDir(dir: string): void {
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) throw unsafe(dir, 'it is a symbolic link');
  if (!st.isDirectory()) throw unsafe(dir, 'it is not a directory');
  const uid = myUid();
  if (uid !== undefined && uid !== 0 && st.uid !== uid) throw unsafe(dir, `it belongs to uid ${st.uid}`);
  if ((st.mode & 0o022) !== 0) throw unsafe(dir, `others may write in it (mode ${(st.mode & 0o777).toString(8)})`);
}

/**
 * Opens a file inside a checked private directory: never through a symlink, never a FIFO or
 * device, never a file with another name elsewhere (a hard link), never another user's file
 * (root accepts the directory owner's). `flags` are the usual O_* flags; O_NOFOLLOW and O_NONBLOCK
 * are added (node opens every file close-on-exec).
 */
export function openPrivateFile(path: string, flags: number, mode = 0o600): number {
  let fd: number;
  try {
    fd = openSync(path, flags | fsc.O_NOFOLLOW | fsc.O_NONBLOCK, mode);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw unsafe(path, 'it is a symbolic link');
    throw new LayerFsError(code === 'ENOENT' ? 'ERR_NOT_FOUND' : 'ERR_NATIVE_IO', `cannot open ${path}: ${code}`, { path, errno: code });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw unsafe(path, 'it is not a regular file');
    if (st.nlink !== 1) throw unsafe(path, `it has ${st.nlink} names (a hard link)`);
    const uid = myUid();
    if (uid !== undefined && st.uid !== uid && !(uid === 0 && st.uid === ownerOf(path))) throw unsafe(path, `it belongs to uid ${st.uid}`);
    return fd;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

function ownerOf(path: string): number {
  return lstatSync(path.slice(0, Math.max(1, path.lastIndexOf('/')))).uid;
}
