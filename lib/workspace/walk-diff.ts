/**
 * The change set of a whole walk against the stat cache (diffWalk), for when paths moved: serials
 * follow inodes, so a rename keeps its serial and shows as a rename, and every name of one inode
 * (hard links) shares one serial. Phases, in order: drop what a state cannot hold, give every
 * path a serial, find changed entries, deleted serials, name bindings and deleted paths.
 */
import { walkName, walkRelPath, WalkKind, type WalkResult } from '../native/walk.js';
import { excludeMatcher, ROOT_SERIAL } from '../store/index.js';
import type { StatCache } from './cache.js';
import { compactWalk, HI, inoKey, LO, matchPaths, words } from './walk-match.js';

/** A serial whose record is rewritten: its first changed entry and its parents' serials, in order. */
export interface ChangedSerial {
  index: number;
  parents: number[];
}

/**
 * Adds one parent (a name) of a changed serial. A whole-tree change lists ~90,000 serials, nearly
 * all with one parent: an array grown by `push` (or built by spreading) reserves 17 slots
 * (152 B), a literal or `new Array(n)` holds exactly its elements (24 B for one); in a
 * whole-tree commit's heap that was 15.9 against 4.9 MiB of array elements.
 */
export function addParent(c: ChangedSerial, parent: number): void {
  const n = c.parents.length;
  if (n === 0) {
    c.parents = [parent];
    return;
  }
  const next = new Array<number>(n + 1);
  for (let k = 0; k < n; k++) next[k] = c.parents[k]!;
  next[n] = parent;
  c.parents = next;
}

export interface ChangeSet {
  /** The Workspace now (the walk without skipped entries) with its serials: the next cache. */
  now: StatCache;
  /** Per entry of `now`: the cache entry at the same path, or -1. */
  oldIndex: Int32Array;
  /** Per entry of `now`: 1 when its stat, serial or parent differs from the cache (or it is new). */
  changed: Uint8Array;
  /** Serials whose record must be rewritten: the first changed entry, and the current parents. */
  changedSerials: Map<number, ChangedSerial>;
  deletedSerials: number[];
  /** Per directory serial: name (latin1 key: its bytes, one per character) → serial (null = removed). */
  names: Map<number, Map<string, number | null>>;
  /** Cache entries whose path is gone. */
  deletedPaths: number[];
  /** Paths a state cannot hold (sockets), as text. */
  skipped: string[];
  readonly clean: boolean;
  /** Entry i of `now`: path relative to the Workspace, and absolute. */
  relPath(i: number): Buffer;
  absPath(i: number): Buffer;
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

const SLASH = Buffer.from('/');

/** The walk without what a state cannot hold (sockets, unknown kinds) and without new excluded paths. */
function keptWalk(dir: string, root: Buffer, walk: WalkResult, cache: StatCache, exclude: readonly string[]): { now: WalkResult; skipped: string[] } {
  const skipped: string[] = [];
  const keep = new Uint8Array(walk.count).fill(1);
  for (let i = 1; i < walk.count; i++) {
    if (walk.kind[i] !== WalkKind.Socket && walk.kind[i] !== WalkKind.Unknown) continue;
    keep[i] = 0;
    skipped.push(Buffer.concat([root, SLASH, walkRelPath(walk, i)]).toString());
  }
  const excluded = leaveOutNew(dir, walk, cache, keep, exclude);
  return { now: skipped.length > 0 || excluded > 0 ? compactWalk(walk, keep).walk : walk, skipped };
}

/** The walk paired with the cache by path, and the serials being given to the walk's entries. */
interface Pairing {
  now: WalkResult;
  cache: StatCache;
  /** Per entry of `now`: the cache entry at the same path, or -1. */
  oldIndex: Int32Array;
  nIno: Uint32Array;
  oIno: Uint32Array;
  serial: Uint32Array;
  /** Per serial: 1 once an entry of `now` has it. */
  claimed: Uint8Array;
  /** The highest serial used; new serials go above it. */
  hwm: number;
  /** Bound on every serial, for arrays indexed by serial. */
  cap: number;
}

function pair(now: WalkResult, cache: StatCache): Pairing {
  let hwm = Math.max(cache.maxSerial, ROOT_SERIAL);
  for (let j = 0; j < cache.count; j++) if (cache.serial[j]! > hwm) hwm = cache.serial[j]!;
  const cap = hwm + now.count + 2;
  return { now, cache, oldIndex: matchPaths(now, cache), nIno: words(now.ino), oIno: words(cache.ino), serial: new Uint32Array(now.count), claimed: new Uint8Array(cap), hwm, cap };
}

const parentSerial = (p: Pairing, i: number): number => (i === 0 ? 0 : p.serial[p.now.parent[i]!]!);
const oldParentSerial = (p: Pairing, j: number): number => (j === 0 ? 0 : p.cache.serial[p.cache.parent[j]!]!);

/** Per serial, the cache entries (paths) that had it; per cache entry, the entry now at its path. */
interface MovedFrom {
  pathsOf: Map<number, number[]>;
  nowAt: Int32Array;
}

function movedFrom(p: Pairing): MovedFrom {
  const pathsOf = new Map<number, number[]>();
  for (let q = 1; q < p.cache.count; q++) {
    const s = p.cache.serial[q]!;
    const l = pathsOf.get(s);
    if (l) l.push(q);
    else pathsOf.set(s, [q]);
  }
  const nowAt = new Int32Array(p.cache.count).fill(-1);
  for (let i = 0; i < p.now.count; i++) if (p.oldIndex[i]! >= 0) nowAt[p.oldIndex[i]!] = i;
  return { pathsOf, nowAt };
}

/**
 * Whether entry i, found at another path by its inode number, is that inode moved or linked
 * here: some old path of serial s is gone, or still has the same inode (a hard link). When
 * every old path is still there with another inode, the number was freed and reused (`sed -i`
 * then `cp`), or the file was moved and its path re-created: then the old paths keep the serial
 * and this is a new inode, so a rename is reported only for a path that disappeared.
 */
function movedHere(p: Pairing, m: MovedFrom, s: number, i: number): boolean {
  const { now, nIno } = p;
  for (const q of m.pathsOf.get(s) ?? []) {
    const k = m.nowAt[q]!;
    if (k < 0 || (now.kind[k] === now.kind[i] && nIno[2 * k] === nIno[2 * i] && nIno[2 * k + 1] === nIno[2 * i + 1])) return true;
  }
  return false;
}

/**
 * Serials by inode: same inode → same serial (unchanged, edited, renamed, linked). The inode map
 * of the whole cache is built only when some path does not keep its own inode.
 */
function keepSerials(p: Pairing): void {
  const { now, cache, oldIndex, nIno, oIno, serial, claimed } = p;
  serial[0] = ROOT_SERIAL;
  claimed[ROOT_SERIAL] = 1;
  let byIno: Map<number | string, number> | null = null;
  let moved: MovedFrom | null = null;
  for (let i = 1; i < now.count; i++) {
    const k = now.kind[i]!;
    const j = oldIndex[i]!;
    let s: number | undefined;
    if (j >= 0 && cache.kind[j] === k && oIno[2 * j] === nIno[2 * i] && oIno[2 * j + 1] === nIno[2 * i + 1]) {
      s = cache.serial[j]!;
    } else {
      if (!byIno) {
        byIno = new Map();
        for (let q = 0; q < cache.count; q++) byIno.set(inoKey(cache.kind[q]!, oIno[2 * q + LO]!, oIno[2 * q + HI]!), cache.serial[q]!);
      }
      s = byIno.get(inoKey(k, nIno[2 * i + LO]!, nIno[2 * i + HI]!));
      if (s !== undefined && !movedHere(p, (moved ??= movedFrom(p)), s, i)) s = undefined;
    }
    if (s !== undefined && s !== ROOT_SERIAL && !(k === WalkKind.Dir && claimed[s])) {
      serial[i] = s;
      claimed[s] = 1;
    }
  }
}

/**
 * New inodes: further names of one new inode are hard links (one serial); a replaced file keeps
 * its path's serial; anything else gets a serial above every serial this Workspace has used.
 */
function freshSerials(p: Pairing): void {
  const { now, cache, oldIndex, nIno, serial, claimed } = p;
  let fresh: Map<number | string, number> | null = null;
  for (let i = 1; i < now.count; i++) {
    if (serial[i] !== 0) continue;
    const k = now.kind[i]!;
    const j = oldIndex[i]!;
    const key = inoKey(k, nIno[2 * i + LO]!, nIno[2 * i + HI]!);
    const linked = k === WalkKind.Dir ? undefined : fresh?.get(key);
    let s: number;
    if (linked !== undefined) s = linked;
    else if (j >= 0 && cache.kind[j] === k && !claimed[cache.serial[j]!]) s = cache.serial[j]!;
    else s = ++p.hwm;
    (fresh ??= new Map()).set(key, s);
    claimed[s] = 1;
    serial[i] = s;
  }
}

/** Stat fields of the walk (n) and the cache (o) as 32-bit words. */
interface StatWords {
  nSize: Uint32Array;
  oSize: Uint32Array;
  nMt: Uint32Array;
  oMt: Uint32Array;
  nCt: Uint32Array;
  oCt: Uint32Array;
}

/** Whether entry i of the walk equals cache entry j: stats compared as words, serial and parent serial. */
function sameEntry(p: Pairing, w: StatWords, i: number, j: number): boolean {
  const { now, cache, nIno, oIno } = p;
  const a = 2 * i;
  const b = 2 * j;
  return (
    j >= 0 &&
    cache.serial[j] === p.serial[i] &&
    cache.kind[j] === now.kind[i] &&
    cache.mode[j] === now.mode[i] &&
    oIno[b] === nIno[a] &&
    oIno[b + 1] === nIno[a + 1] &&
    w.oSize[b] === w.nSize[a] &&
    w.oSize[b + 1] === w.nSize[a + 1] &&
    w.oMt[b] === w.nMt[a] &&
    w.oMt[b + 1] === w.nMt[a + 1] &&
    w.oCt[b] === w.nCt[a] &&
    w.oCt[b + 1] === w.nCt[a + 1] &&
    oldParentSerial(p, j) === parentSerial(p, i)
  );
}

function changedEntries(p: Pairing): Pick<ChangeSet, 'changed' | 'changedSerials'> {
  const { now, cache, serial } = p;
  const w: StatWords = { nSize: words(now.size), oSize: words(cache.size), nMt: words(now.mtimeNs), oMt: words(cache.mtimeNs), nCt: words(now.ctimeNs), oCt: words(cache.ctimeNs) };
  const changed = new Uint8Array(now.count);
  const changedSerials = new Map<number, ChangedSerial>();
  const isChanged = new Uint8Array(p.cap);
  for (let i = 0; i < now.count; i++) {
    if (sameEntry(p, w, i, p.oldIndex[i]!)) continue;
    changed[i] = 1;
    const s = serial[i]!;
    if (!isChanged[s]) {
      isChanged[s] = 1;
      changedSerials.set(s, { index: i, parents: [] });
    }
  }
  // Every name of a changed serial (hard links too) is one parent of its record.
  if (changedSerials.size > 0) {
    for (let i = 1; i < now.count; i++) if (isChanged[serial[i]!]) addParent(changedSerials.get(serial[i]!)!, parentSerial(p, i));
    for (const c of changedSerials.values()) c.parents.sort((x, y) => x - y);
  }
  return { changed, changedSerials };
}

/** Serials of the cache no entry of the walk has any more, and which serials are current. */
function deletedSerialsOf(p: Pairing): { deletedSerials: number[]; isCurrent: Uint8Array } {
  const isCurrent = new Uint8Array(p.cap);
  for (let i = 0; i < p.now.count; i++) isCurrent[p.serial[i]!] = 1;
  const deletedSerials: number[] = [];
  const isDeleted = new Uint8Array(p.cap);
  for (let j = 0; j < p.cache.count; j++) {
    const s = p.cache.serial[j]!;
    if (!isCurrent[s] && !isDeleted[s]) {
      isDeleted[s] = 1;
      deletedSerials.push(s);
    }
  }
  return { deletedSerials, isCurrent };
}

type Names = ChangeSet['names'];

function setName(names: Names, d: number, name: Buffer, s: number | null): void {
  let mm = names.get(d);
  if (!mm) names.set(d, (mm = new Map()));
  mm.set(name.toString('latin1'), s);
}

/**
 * Name bindings (directory serial, name) → serial. A path found at the same place under the
 * same parent serial has the same binding key in the cache; only the rest need keyed maps.
 */
function nameBindings(p: Pairing, isCurrent: Uint8Array): Names {
  const { now, cache, serial, oldIndex } = p;
  const names: Names = new Map();
  const aligned = new Uint8Array(cache.count);
  const restNow: number[] = [];
  for (let i = 1; i < now.count; i++) {
    const j = oldIndex[i]!;
    const d = parentSerial(p, i);
    if (j >= 0 && oldParentSerial(p, j) === d) {
      aligned[j] = 1;
      if (cache.serial[j] !== serial[i]) setName(names, d, walkName(now, i), serial[i]!);
    } else restNow.push(i);
  }
  const restOld: number[] = [];
  for (let j = 1; j < cache.count; j++) if (!aligned[j]) restOld.push(j);
  if (restNow.length > 0 || restOld.length > 0) movedBindings(p, isCurrent, names, restNow, restOld);
  return names;
}

/** Bindings of the paths not found at their old place: keyed by (parent serial, name). */
function movedBindings(p: Pairing, isCurrent: Uint8Array, names: Names, restNow: number[], restOld: number[]): void {
  const { now, cache, serial } = p;
  const key = (d: number, name: Buffer) => `${d}/${name.toString('latin1')}`;
  const oldBinding = new Map<string, number>();
  for (const j of restOld) oldBinding.set(key(oldParentSerial(p, j), walkName(cache, j)), cache.serial[j]!);
  const nowKeys = new Set<string>();
  for (const i of restNow) {
    const name = walkName(now, i);
    const k = key(parentSerial(p, i), name);
    nowKeys.add(k);
    if (oldBinding.get(k) !== serial[i]) setName(names, parentSerial(p, i), name, serial[i]!);
  }
  for (const j of restOld) {
    const d = oldParentSerial(p, j);
    const name = walkName(cache, j);
    if (!nowKeys.has(key(d, name)) && isCurrent[d]) setName(names, d, name, null);
  }
}

/** Cache entries whose path no entry of the walk has. */
function deletedPathsOf(p: Pairing): number[] {
  const matched = new Uint8Array(p.cache.count);
  for (let i = 0; i < p.now.count; i++) if (p.oldIndex[i]! >= 0) matched[p.oldIndex[i]!] = 1;
  const deletedPaths: number[] = [];
  for (let j = 1; j < p.cache.count; j++) if (!matched[j]) deletedPaths.push(j);
  return deletedPaths;
}

export function diffWalk(dir: string, walk: WalkResult, cache: StatCache, exclude: readonly string[] = []): ChangeSet {
  const root = Buffer.from(dir);
  const { now, skipped } = keptWalk(dir, root, walk, cache, exclude);
  const p = pair(now, cache);
  keepSerials(p);
  freshSerials(p);
  const { changed, changedSerials } = changedEntries(p);
  const { deletedSerials, isCurrent } = deletedSerialsOf(p);
  const names = nameBindings(p, isCurrent);
  return {
    now: { ...now, serial: p.serial, maxSerial: p.hwm },
    oldIndex: p.oldIndex,
    changed,
    changedSerials,
    deletedSerials,
    names,
    deletedPaths: deletedPathsOf(p),
    skipped,
    clean: changedSerials.size === 0 && deletedSerials.length === 0 && names.size === 0,
    relPath: (i) => walkRelPath(now, i),
    absPath: (i) => (i === 0 ? root : Buffer.concat([root, SLASH, walkRelPath(now, i)])),
  };
}
