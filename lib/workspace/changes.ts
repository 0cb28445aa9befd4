/**
 * What changed in a materialized Workspace since it last matched a stored state: a walk plus
 * lstat of every path, compared with the stat cache. Only paths whose stat changed are re-read
 * later. Serials follow inodes, so a rename keeps its serial and shows as a rename.
 */
import { lstatSync, type BigIntStats } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { statSignature, walkTree, ROOT_SERIAL } from '../store/index.js';
import type { CacheRow } from './cache.js';

export interface ScannedPath {
  rel: Buffer;
  abs: Buffer;
  name: Buffer;
  kind: string;
  serial: number;
  parentSerial: number;
  sig: string;
  changed: boolean;
}

export interface ChangeSet {
  paths: ScannedPath[];
  /** Serials whose record must be rewritten, with the current parents of each. */
  changedSerials: Map<number, { path: ScannedPath; parents: number[] }>;
  deletedSerials: number[];
  /** Per directory serial: name → serial (null = removed). */
  names: Map<number, Map<string, { name: Buffer; serial: number | null }>>;
  deletedPaths: Buffer[];
  skipped: string[];
  get clean(): boolean;
}

export function kindOfStats(st: BigIntStats): string {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'dir';
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isFIFO()) return 'fifo';
  if (st.isCharacterDevice()) return 'chardev';
  if (st.isBlockDevice()) return 'blockdev';
  return 'socket';
}

export function signatureOf(st: BigIntStats): string {
  return statSignature(kindOfStats(st), st.ino, st.size, st.mtimeNs, st.ctimeNs, Number(st.mode & 0o7777n));
}

const kindOfSig = (sig: string) => sig.slice(0, sig.indexOf(':'));

export function computeChanges(dir: string, cache: Map<string, CacheRow>): ChangeSet {
  let walk;
  try {
    walk = walkTree(dir);
  } catch (e) {
    if (e instanceof LayerFsError && e.details.errno === 'ENOENT') {
      throw new LayerFsError('ERR_NOT_FOUND', `the Workspace directory is gone: ${dir}`, { path: dir, hint: 'end the Workspace with --discard' });
    }
    throw e;
  }
  const prefix = Buffer.byteLength(dir) + 1;
  const skipped: string[] = [];
  const stats: (BigIntStats | undefined)[] = walk.map((w) => lstatSync(w.path, { bigint: true, throwIfNoEntry: false }));
  // Serials by inode, from the cache: same inode → same serial (unchanged, edited, renamed, linked).
  const byIno = new Map<string, number>();
  let maxSerial = ROOT_SERIAL;
  for (const row of cache.values()) {
    byIno.set(`${kindOfSig(row.sig)}:${row.ino}`, row.serial);
    if (row.serial > maxSerial) maxSerial = row.serial;
  }
  const serialOf = new Int32Array(walk.length);
  const claimed = new Set<number>();
  for (let i = 0; i < walk.length; i++) {
    const st = stats[i];
    if (!st) continue;
    if (i === 0) {
      serialOf[0] = ROOT_SERIAL;
      claimed.add(ROOT_SERIAL);
      continue;
    }
    const s = byIno.get(`${kindOfStats(st)}:${st.ino}`);
    if (s !== undefined && s !== ROOT_SERIAL && !(kindOfStats(st) === 'dir' && claimed.has(s))) {
      serialOf[i] = s;
      claimed.add(s);
    }
  }
  const paths: ScannedPath[] = [];
  const fresh = new Map<string, number>();
  const indexPath: (ScannedPath | undefined)[] = new Array(walk.length);
  for (let i = 0; i < walk.length; i++) {
    const st = stats[i];
    const w = walk[i]!;
    // Gone since the walk listed it, or inside something gone: it is simply not there.
    if (!st || (w.parent >= 0 && !indexPath[w.parent])) continue;
    const kind = kindOfStats(st);
    const rel = i === 0 ? Buffer.alloc(0) : w.path.subarray(prefix);
    if (kind === 'socket') {
      skipped.push(w.path.toString());
      continue;
    }
    const key = rel.toString('latin1');
    const cached = cache.get(key);
    if (serialOf[i] === 0) {
      const inoKey = `${kind}:${st.ino}`;
      const linked = kind === 'dir' ? undefined : fresh.get(inoKey);
      if (linked !== undefined) serialOf[i] = linked;
      else if (cached && kindOfSig(cached.sig) === kind && !claimed.has(cached.serial)) serialOf[i] = cached.serial;
      else serialOf[i] = ++maxSerial;
      // Further names of the same new inode are hard links: one serial.
      fresh.set(inoKey, serialOf[i]!);
      claimed.add(serialOf[i]!);
    }
    const parentSerial = w.parent >= 0 ? indexPath[w.parent]!.serial : 0;
    const sig = signatureOf(st);
    const p: ScannedPath = {
      rel,
      abs: w.path,
      name: w.name,
      kind,
      serial: serialOf[i]!,
      parentSerial,
      sig,
      changed: !cached || cached.serial !== serialOf[i] || cached.sig !== sig || cached.parentSerial !== parentSerial,
    };
    indexPath[i] = p;
    paths.push(p);
  }

  const current = new Set<number>();
  const parentsOf = new Map<number, number[]>();
  for (const p of paths) {
    current.add(p.serial);
    if (p.parentSerial) {
      const list = parentsOf.get(p.serial);
      if (list) list.push(p.parentSerial);
      else parentsOf.set(p.serial, [p.parentSerial]);
    }
  }
  const changedSerials = new Map<number, { path: ScannedPath; parents: number[] }>();
  for (const p of paths) {
    if (p.changed && !changedSerials.has(p.serial)) changedSerials.set(p.serial, { path: p, parents: (parentsOf.get(p.serial) ?? []).sort((a, b) => a - b) });
  }
  // A hard link whose other name changed: every name of a changed serial shares its record.
  const deletedPaths: Buffer[] = [];
  const oldNames = new Map<string, number>();
  const deleted = new Set<number>();
  for (const [key, row] of cache) {
    if (!current.has(row.serial)) deleted.add(row.serial);
    if (key.length === 0) continue;
    const rel = Buffer.from(key, 'latin1');
    oldNames.set(`${row.parentSerial}/${nameOf(rel).toString('latin1')}`, row.serial);
  }
  const names = new Map<number, Map<string, { name: Buffer; serial: number | null }>>();
  const setName = (dir: number, name: Buffer, serial: number | null) => {
    let m = names.get(dir);
    if (!m) names.set(dir, (m = new Map()));
    m.set(name.toString('latin1'), { name, serial });
  };
  const curNames = new Set<string>();
  for (const p of paths) {
    if (!p.parentSerial) continue;
    const k = `${p.parentSerial}/${p.name.toString('latin1')}`;
    curNames.add(k);
    if (oldNames.get(k) !== p.serial) setName(p.parentSerial, p.name, p.serial);
  }
  const currentKeys = new Set(paths.map((p) => p.rel.toString('latin1')));
  for (const [key, row] of cache) {
    if (key.length === 0) continue;
    const rel = Buffer.from(key, 'latin1');
    const k = `${row.parentSerial}/${nameOf(rel).toString('latin1')}`;
    if (!curNames.has(k) && current.has(row.parentSerial) && !deleted.has(row.parentSerial)) setName(row.parentSerial, nameOf(rel), null);
    if (!currentKeys.has(key)) deletedPaths.push(rel);
  }
  return {
    paths,
    changedSerials,
    deletedSerials: [...deleted],
    names,
    deletedPaths,
    skipped,
    get clean() {
      return changedSerials.size === 0 && deleted.size === 0 && names.size === 0;
    },
  };
}

function nameOf(rel: Buffer): Buffer {
  const i = rel.lastIndexOf(0x2f);
  return i < 0 ? rel : rel.subarray(i + 1);
}
