/**
 * What changed in a materialized Workspace since it last matched a stored state: a native walk
 * plus lstat of every path (lib/native walkTree), compared with the stat cache. Only paths whose
 * stat changed are re-read later. Serials follow inodes, so a rename keeps its serial and shows
 * as a rename, and every name of one inode (hard links) shares one serial.
 *
 * Walk and cache share one order (each directory's children contiguous and sorted by name
 * bytes), so paths are matched by merging sibling lists, and stats are compared field by field
 * on typed arrays: no per-path strings or objects unless something changed.
 */
import { endianness } from 'node:os';
import { LayerFsError } from '../errors.js';
import { walkName, walkRelPath, walkTreeAgainst, walkTreeAgainstSync, WalkKind, WALK_KIND_NAMES, type WalkAgainst, type WalkResult } from '../native/index.js';
import { excludeMatcher, ROOT_SERIAL } from '../store/index.js';
import type { StatCache } from './cache.js';

export interface ChangeSet {
  /** The Workspace now (the walk without skipped entries) with its serials: the next cache. */
  now: StatCache;
  /** Per entry of `now`: the cache entry at the same path, or -1. */
  oldIndex: Int32Array;
  /** Per entry of `now`: 1 when its stat, serial or parent differs from the cache (or it is new). */
  changed: Uint8Array;
  /** Serials whose record must be rewritten: the first changed entry, and the current parents. */
  changedSerials: Map<number, { index: number; parents: number[] }>;
  deletedSerials: number[];
  /** Per directory serial: name → serial (null = removed). */
  names: Map<number, Map<string, { name: Buffer; serial: number | null }>>;
  /** Cache entries whose path is gone. */
  deletedPaths: number[];
  /** Paths a state cannot hold (sockets), as text. */
  skipped: string[];
  readonly clean: boolean;
  /** Entry i of `now`: path relative to the Workspace, and absolute. */
  relPath(i: number): Buffer;
  absPath(i: number): Buffer;
}

export const kindName = (code: number): string => WALK_KIND_NAMES[code] ?? 'unknown';

function gone(dir: string, e: unknown): unknown {
  if (e instanceof LayerFsError && e.details.errno === 'ENOENT') {
    return new LayerFsError('ERR_NOT_FOUND', `the Workspace directory is gone: ${dir}`, { path: dir, hint: 'end the Workspace with --discard' });
  }
  return e;
}

/**
 * The walk is compared with the cache in native code (walkTreeAgainst): when nothing moved, or
 * only stats changed in place (edits, chmod, touch), no walk is copied out and the change set is
 * built from the changed entries alone; otherwise the whole walk is diffed here (diffWalk).
 */
export async function computeChanges(dir: string, cache: StatCache, exclude: readonly string[] = []): Promise<ChangeSet> {
  let r: WalkAgainst;
  try {
    r = await walkTreeAgainst(dir, cache);
  } catch (e) {
    throw gone(dir, e);
  }
  return changesFrom(dir, r, cache, exclude);
}

export function computeChangesSync(dir: string, cache: StatCache): ChangeSet {
  let r: WalkAgainst;
  try {
    r = walkTreeAgainstSync(dir, cache);
  } catch (e) {
    throw gone(dir, e);
  }
  return changesFrom(dir, r, cache);
}

function changesFrom(dir: string, r: WalkAgainst, cache: StatCache, exclude: readonly string[] = []): ChangeSet {
  if (r.kind === 'walk') return diffWalk(dir, r.walk, cache, exclude);
  return statsChanged(dir, cache, r.kind === 'stats' ? r : null);
}

/**
 * The change set when the Workspace has the cache's paths, kinds and inodes, in the same order:
 * every serial, parent and name binding stays; only the listed entries' stats differ (none when
 * `r` is null). Gives what diffWalk gives for such a walk, in time linear in the changes plus
 * a few array copies.
 */
export function statsChanged(
  dir: string,
  cache: StatCache,
  r: { changed: Uint32Array; mode: Uint32Array; size: BigInt64Array; mtimeNs: BigInt64Array; ctimeNs: BigInt64Array } | null,
): ChangeSet {
  const root = Buffer.from(dir);
  const n = cache.count;
  const oldIndex = new Int32Array(n);
  for (let i = 0; i < n; i++) oldIndex[i] = i;
  const changed = new Uint8Array(n);
  const changedSerials = new Map<number, { index: number; parents: number[] }>();
  let now: StatCache = cache;
  if (r && r.changed.length > 0) {
    // Arrays that do not change are shared with the cache (caches are never modified in place).
    // No serial is above maxSerial (loadCache checks it; diffWalk and materialize set it so).
    now = { ...cache, mode: cache.mode.slice(), size: cache.size.slice(), mtimeNs: cache.mtimeNs.slice(), ctimeNs: cache.ctimeNs.slice(), maxSerial: Math.max(cache.maxSerial, ROOT_SERIAL) };
    delete now.stored;
    const cap = now.maxSerial + 1;
    const isChanged = new Uint8Array(cap);
    for (let k = 0; k < r.changed.length; k++) {
      const i = r.changed[k]!;
      now.mode[i] = r.mode[k]!;
      now.size[i] = r.size[k]!;
      now.mtimeNs[i] = r.mtimeNs[k]!;
      now.ctimeNs[i] = r.ctimeNs[k]!;
      changed[i] = 1;
      const s = cache.serial[i]!;
      if (!isChanged[s]) {
        isChanged[s] = 1;
        changedSerials.set(s, { index: i, parents: [] });
      }
    }
    // Every name of a changed serial (hard links too) is one parent of its record; indexOf
    // searches natively, where a loop over every entry would run cold once per commit.
    const serial = cache.serial;
    for (const [s, c] of changedSerials) {
      for (let i = serial.indexOf(s, 1); i >= 0; i = serial.indexOf(s, i + 1)) c.parents.push(serial[cache.parent[i]!]!);
      c.parents.sort((x, y) => x - y);
    }
  }
  return {
    now,
    oldIndex,
    changed,
    changedSerials,
    deletedSerials: [],
    names: new Map(),
    deletedPaths: [],
    skipped: [],
    clean: changedSerials.size === 0,
    relPath: (i) => walkRelPath(now, i),
    absPath: (i) => (i === 0 ? root : Buffer.concat([root, SLASH, walkRelPath(now, i)])),
  };
}

const LE = endianness() === 'LE';
const LO = LE ? 0 : 1;
const HI = LE ? 1 : 0;

const words = (a: BigInt64Array | BigUint64Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length * 2);

/** Drops entries with keep[i] = 0 and everything below them; returns the walk and new → old indices. */
export function compactWalk(w: WalkResult, keep: Uint8Array): { walk: WalkResult; from: Int32Array } {
  const n = w.count;
  const to = new Int32Array(n).fill(-1);
  let count = 0;
  let nameBytes = 0;
  for (let i = 0; i < n; i++) {
    if (!keep[i] || (i > 0 && to[w.parent[i]!]! < 0)) continue;
    to[i] = count++;
    nameBytes += w.nameOffsets[i + 1]! - w.nameOffsets[i]!;
  }
  const from = new Int32Array(count);
  const out: WalkResult = {
    count,
    names: Buffer.allocUnsafe(nameBytes),
    nameOffsets: new Uint32Array(count + 1),
    parent: new Int32Array(count),
    kind: new Uint8Array(count),
    mode: new Uint32Array(count),
    ino: new BigUint64Array(count),
    size: new BigInt64Array(count),
    mtimeNs: new BigInt64Array(count),
    ctimeNs: new BigInt64Array(count),
  };
  let off = 0;
  for (let i = 0; i < n; i++) {
    const k = to[i]!;
    if (k < 0) continue;
    from[k] = i;
    off += w.names.copy(out.names, off, w.nameOffsets[i]!, w.nameOffsets[i + 1]!);
    out.nameOffsets[k + 1] = off;
    out.parent[k] = i === 0 ? -1 : to[w.parent[i]!]!;
    out.kind[k] = w.kind[i]!;
    out.mode[k] = w.mode[i]!;
    out.ino[k] = w.ino[i]!;
    out.size[k] = w.size[i]!;
    out.mtimeNs[k] = w.mtimeNs[i]!;
    out.ctimeNs[k] = w.ctimeNs[i]!;
  }
  return { walk: out, from };
}

/** [start, end) of each directory's children (contiguous in walk order); empty when none. */
function childRanges(w: WalkResult): { start: Int32Array; end: Int32Array } {
  const start = new Int32Array(w.count);
  const end = new Int32Array(w.count);
  const parent = w.parent;
  for (let i = 1; i < w.count; i++) {
    const p = parent[i]!;
    if (end[p] === 0) start[p] = i;
    end[p] = i + 1;
  }
  return { start, end };
}

/** Buffer.compare order of name i of a and name j of b. */
function compareNames(a: WalkResult, i: number, b: WalkResult, j: number): number {
  const an = a.names;
  const bn = b.names;
  let x = a.nameOffsets[i]!;
  let y = b.nameOffsets[j]!;
  const lx = a.nameOffsets[i + 1]! - x;
  const ly = b.nameOffsets[j + 1]! - y;
  const end = x + (lx < ly ? lx : ly);
  for (; x < end; x++, y++) {
    const d = an[x]! - bn[y]!;
    if (d !== 0) return d;
  }
  return lx - ly;
}

/** For each entry of `now`, the entry of `old` at the same path, or -1: a merge of sibling lists. */
export function matchPaths(now: WalkResult, old: WalkResult): Int32Array {
  const match = new Int32Array(now.count).fill(-1);
  if (old.count === 0) return match;
  const a = childRanges(now);
  const b = childRanges(old);
  match[0] = 0;
  for (let d = 0; d < now.count; d++) {
    const od = match[d]!;
    if (od < 0 || now.kind[d] !== WalkKind.Dir) continue;
    let i = a.start[d]!;
    const ie = a.end[d]!;
    let j = b.start[od]!;
    const je = b.end[od]!;
    while (i < ie && j < je) {
      const c = compareNames(now, i, old, j);
      if (c === 0) match[i++] = j++;
      else if (c < 0) i++;
      else j++;
    }
  }
  return match;
}

/** A Map key for (kind, inode): a number while it fits, text beyond 2^50. */
function inoKey(kind: number, lo: number, hi: number): number | string {
  return hi < 0x40000 ? (hi * 0x100000000 + lo) * 8 + kind : `${kind}:${hi}:${lo}`;
}

/**
 * `.layerfsignore` in a materialized Workspace, and a commit's `--exclude` patterns: new paths
 * they match are left out (keep[i] = 0)
 * and so never committed; paths the state already has stay, as files git tracks stay whatever
 * .gitignore says. Returns how many were left out.
 */
function leaveOutNew(dir: string, walk: WalkResult, cache: StatCache, keep: Uint8Array, patterns: readonly string[]): number {
  const exclude = excludeMatcher(dir, patterns);
  if (!exclude) return 0;
  const old = matchPaths(walk, cache);
  let n = 0;
  for (let i = 1; i < walk.count; i++) {
    if (old[i]! >= 0 || !keep[walk.parent[i]!]) continue;
    const rel = walkRelPath(walk, i).toString();
    if (exclude(walk.kind[i] === WalkKind.Dir ? `${rel}/` : rel)) {
      keep[i] = 0;
      n++;
    }
  }
  return n;
}

export function diffWalk(dir: string, walk: WalkResult, cache: StatCache, exclude: readonly string[] = []): ChangeSet {
  const root = Buffer.from(dir);
  const skipped: string[] = [];
  let now = walk;
  {
    let bad = 0;
    for (let i = 1; i < walk.count; i++) if (walk.kind[i] === WalkKind.Socket || walk.kind[i] === WalkKind.Unknown) bad++;
    const keep = new Uint8Array(walk.count).fill(1);
    if (bad > 0) {
      for (let i = 1; i < walk.count; i++) {
        if (walk.kind[i] !== WalkKind.Socket && walk.kind[i] !== WalkKind.Unknown) continue;
        keep[i] = 0;
        skipped.push(Buffer.concat([root, SLASH, walkRelPath(walk, i)]).toString());
      }
    }
    const excluded = leaveOutNew(dir, walk, cache, keep, exclude);
    if (bad > 0 || excluded > 0) now = compactWalk(walk, keep).walk;
  }
  const n = now.count;
  const m = cache.count;
  const oldIndex = matchPaths(now, cache);

  let hwm = Math.max(cache.maxSerial, ROOT_SERIAL);
  for (let j = 0; j < m; j++) if (cache.serial[j]! > hwm) hwm = cache.serial[j]!;
  const cap = hwm + n + 2;
  const nIno = words(now.ino);
  const oIno = words(cache.ino);

  // Serials by inode: same inode → same serial (unchanged, edited, renamed, linked). The inode
  // map of the whole cache is built only when some path does not keep its own inode.
  const serial = new Uint32Array(n);
  const claimed = new Uint8Array(cap);
  serial[0] = ROOT_SERIAL;
  claimed[ROOT_SERIAL] = 1;
  let byIno: Map<number | string, number> | null = null;
  for (let i = 1; i < n; i++) {
    const k = now.kind[i]!;
    const j = oldIndex[i]!;
    let s: number | undefined;
    if (j >= 0 && cache.kind[j] === k && oIno[2 * j] === nIno[2 * i] && oIno[2 * j + 1] === nIno[2 * i + 1]) {
      s = cache.serial[j]!;
    } else {
      if (!byIno) {
        byIno = new Map();
        for (let q = 0; q < m; q++) byIno.set(inoKey(cache.kind[q]!, oIno[2 * q + LO]!, oIno[2 * q + HI]!), cache.serial[q]!);
      }
      s = byIno.get(inoKey(k, nIno[2 * i + LO]!, nIno[2 * i + HI]!));
    }
    if (s !== undefined && s !== ROOT_SERIAL && !(k === WalkKind.Dir && claimed[s])) {
      serial[i] = s;
      claimed[s] = 1;
    }
  }
  // New inodes: further names of one new inode are hard links (one serial); a replaced file keeps
  // its path's serial; anything else gets a serial above every serial this Workspace has used.
  let fresh: Map<number | string, number> | null = null;
  for (let i = 1; i < n; i++) {
    if (serial[i] !== 0) continue;
    const k = now.kind[i]!;
    const j = oldIndex[i]!;
    const key = inoKey(k, nIno[2 * i + LO]!, nIno[2 * i + HI]!);
    const linked = k === WalkKind.Dir ? undefined : fresh?.get(key);
    let s: number;
    if (linked !== undefined) s = linked;
    else if (j >= 0 && cache.kind[j] === k && !claimed[cache.serial[j]!]) s = cache.serial[j]!;
    else s = ++hwm;
    (fresh ??= new Map()).set(key, s);
    claimed[s] = 1;
    serial[i] = s;
  }

  // Changed entries: stat fields compared as 32-bit words, serial and parent serial.
  const nSize = words(now.size);
  const oSize = words(cache.size);
  const nMt = words(now.mtimeNs);
  const oMt = words(cache.mtimeNs);
  const nCt = words(now.ctimeNs);
  const oCt = words(cache.ctimeNs);
  const parentSerialOf = (i: number) => (i === 0 ? 0 : serial[now.parent[i]!]!);
  const oldParentSerialOf = (j: number) => (j === 0 ? 0 : cache.serial[cache.parent[j]!]!);
  const changed = new Uint8Array(n);
  const changedSerials = new Map<number, { index: number; parents: number[] }>();
  const isChanged = new Uint8Array(cap);
  for (let i = 0; i < n; i++) {
    const j = oldIndex[i]!;
    const a = 2 * i;
    const b = 2 * j;
    const same =
      j >= 0 &&
      cache.serial[j] === serial[i] &&
      cache.kind[j] === now.kind[i] &&
      cache.mode[j] === now.mode[i] &&
      oIno[b] === nIno[a] &&
      oIno[b + 1] === nIno[a + 1] &&
      oSize[b] === nSize[a] &&
      oSize[b + 1] === nSize[a + 1] &&
      oMt[b] === nMt[a] &&
      oMt[b + 1] === nMt[a + 1] &&
      oCt[b] === nCt[a] &&
      oCt[b + 1] === nCt[a + 1] &&
      oldParentSerialOf(j) === parentSerialOf(i);
    if (same) continue;
    changed[i] = 1;
    const s = serial[i]!;
    if (!isChanged[s]) {
      isChanged[s] = 1;
      changedSerials.set(s, { index: i, parents: [] });
    }
  }
  // Every name of a changed serial (hard links too) is one parent of its record.
  if (changedSerials.size > 0) {
    for (let i = 1; i < n; i++) if (isChanged[serial[i]!]) changedSerials.get(serial[i]!)!.parents.push(parentSerialOf(i));
    for (const c of changedSerials.values()) c.parents.sort((x, y) => x - y);
  }

  const isCurrent = new Uint8Array(cap);
  for (let i = 0; i < n; i++) isCurrent[serial[i]!] = 1;
  const deletedSerials: number[] = [];
  const isDeleted = new Uint8Array(cap);
  for (let j = 0; j < m; j++) {
    const s = cache.serial[j]!;
    if (!isCurrent[s] && !isDeleted[s]) {
      isDeleted[s] = 1;
      deletedSerials.push(s);
    }
  }

  // Name bindings (directory serial, name) → serial. A path found at the same place under the
  // same parent serial has the same binding key in the cache; only the rest need keyed maps.
  const names = new Map<number, Map<string, { name: Buffer; serial: number | null }>>();
  const setName = (d: number, name: Buffer, s: number | null) => {
    let mm = names.get(d);
    if (!mm) names.set(d, (mm = new Map()));
    mm.set(name.toString('latin1'), { name, serial: s });
  };
  const aligned = new Uint8Array(m);
  const restNow: number[] = [];
  for (let i = 1; i < n; i++) {
    const j = oldIndex[i]!;
    const p = parentSerialOf(i);
    if (j >= 0 && oldParentSerialOf(j) === p) {
      aligned[j] = 1;
      if (cache.serial[j] !== serial[i]) setName(p, walkName(now, i), serial[i]!);
    } else restNow.push(i);
  }
  const restOld: number[] = [];
  for (let j = 1; j < m; j++) if (!aligned[j]) restOld.push(j);
  if (restNow.length > 0 || restOld.length > 0) {
    const key = (d: number, name: Buffer) => `${d}/${name.toString('latin1')}`;
    const oldBinding = new Map<string, number>();
    for (const j of restOld) oldBinding.set(key(oldParentSerialOf(j), walkName(cache, j)), cache.serial[j]!);
    const nowKeys = new Set<string>();
    for (const i of restNow) {
      const name = walkName(now, i);
      const k = key(parentSerialOf(i), name);
      nowKeys.add(k);
      if (oldBinding.get(k) !== serial[i]) setName(parentSerialOf(i), name, serial[i]!);
    }
    for (const j of restOld) {
      const d = oldParentSerialOf(j);
      const name = walkName(cache, j);
      if (!nowKeys.has(key(d, name)) && isCurrent[d]) setName(d, name, null);
    }
  }

  const matched = new Uint8Array(m);
  for (let i = 0; i < n; i++) if (oldIndex[i]! >= 0) matched[oldIndex[i]!] = 1;
  const deletedPaths: number[] = [];
  for (let j = 1; j < m; j++) if (!matched[j]) deletedPaths.push(j);

  const nowCache: StatCache = { ...now, serial, maxSerial: hwm };
  return {
    now: nowCache,
    oldIndex,
    changed,
    changedSerials,
    deletedSerials,
    names,
    deletedPaths,
    skipped,
    clean: changedSerials.size === 0 && deletedSerials.length === 0 && names.size === 0,
    relPath: (i) => walkRelPath(now, i),
    absPath: (i) => (i === 0 ? root : Buffer.concat([root, SLASH, walkRelPath(now, i)])),
  };
}

const SLASH = Buffer.from('/');
