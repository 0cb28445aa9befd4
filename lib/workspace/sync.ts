/**
 * Moves a materialized Workspace from the state it matches to another one (after a reconciling
 * commit: from the Workspace's own state to the merged one): writes the paths that differ, then
 * records the stat cache for the new state. The work is that of the difference (a page-tree
 * diff) plus one walk of the directory.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { diffStates, maxSerial } from '../history/index.js';
import { walkRelPath, WalkKind } from '../native/walk.js';
import { exportEntry, InodeKind, type Store } from '../store/index.js';
import { saveCache, type StatCache } from './cache.js';
import { compactWalk, computeChangesSync } from './changes.js';
import { isSmudged, SMUDGED_SIZE, smudgeRacy } from './racy.js';

/** Splits a '/'-joined path into name buffers. */
function parts(path: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= path.length; i++) {
    if (i === path.length || path[i] === 0x2f) {
      if (i > start) out.push(path.subarray(start, i));
      start = i + 1;
    }
  }
  return out;
}

/**
 * Writes into `dir` (which shows `fromRoot`) every path where `toRoot` differs, so it shows
 * `toRoot`; returns the number of entries written. The stat cache is the caller's business.
 */
export function writeDifference(store: Store, dir: string, fromRoot: Buffer, toRoot: Buffer, serials?: Map<string, number>): number {
  const entries = diffStates(store, fromRoot, toRoot, { limit: Number.MAX_SAFE_INTEGER }).entries;
  const abs = (p: Buffer) => join(dir, p.toString('utf8'));
  // Removals first, in reverse path order, so a directory goes after its contents.
  const removals: Buffer[] = [];
  for (const e of entries) {
    if (e.change === 'deleted' || e.change === 'modified') removals.push(e.pathBytes);
    if (e.change === 'renamed') removals.push(e.oldPathBytes!, e.pathBytes);
  }
  const byPath = new Map(entries.map((e) => [e.pathBytes.toString('latin1'), e]));
  for (const p of removals.sort(Buffer.compare).reverse()) {
    const e = byPath.get(p.toString('latin1'));
    // A modified directory is rewritten below, with everything under it.
    if (e?.change === 'modified' && e.kind === 'dir') continue;
    rmSync(abs(p), { recursive: true, force: true });
  }
  const to = store.view(toRoot);
  let written = 0;
  const done: Buffer[] = [];
  for (const e of entries) {
    if (e.change === 'deleted') continue;
    if (done.some((d) => e.pathBytes.length > d.length && e.pathBytes[d.length] === 0x2f && e.pathBytes.subarray(0, d.length).equals(d))) continue;
    const { serial, inode } = to.resolve(parts(e.pathBytes), e.path);
    serials?.set(e.pathBytes.toString('latin1'), serial);
    if (e.change === 'modified' && e.kind === 'dir') rmSync(abs(e.pathBytes), { recursive: true, force: true });
    exportEntry(to, serial, abs(e.pathBytes));
    written++;
    if (inode.kind === InodeKind.Dir) done.push(e.pathBytes);
  }
  return written;
}

/**
 * Rewrites `dir` (which shows `fromRoot`) to show `toRoot`, and saves the stat cache of `toRoot`
 * for the Workspace. `cache` is the Workspace's stored cache (of an older state that `dir`
 * showed: its unchanged entries are the same inodes in `toRoot`). `readFromMs`: when a commit
 * read the Workspace's changed files from that wall time on (its racy entries stay racy).
 * Runs inside the caller's write transaction.
 */
export function syncProjection(store: Store, workspaceId: Buffer, dir: string, fromRoot: Buffer, toRoot: Buffer, cache: StatCache, readFromMs?: number): { written: number } {
  const placed = new Map<string, number>();
  const written = writeDifference(store, dir, fromRoot, toRoot, placed);
  const to = store.view(toRoot);
  // The cache: serials of unchanged paths carry over; every path the walk finds changed takes
  // its serial from the new state (renumbered ones included), or leaves the cache when the new
  // state does not hold it (written meanwhile: the next commit sees it as new). Only segments
  // with changed entries are rewritten.
  const walkFromMs = Date.now();
  const cs = computeChangesSync(dir, cache);
  const now = cs.now;
  const serial = Uint32Array.from(now.serial);
  const keep = new Uint8Array(now.count).fill(1);
  // Changed entries this call did not write: read by the commit, or racy in the cache before.
  const notPlaced = new Uint8Array(now.count);
  let foreign = false;
  for (let i = 1; i < now.count; i++) {
    if (!cs.changed[i]) continue;
    const rel = walkRelPath(now, i);
    const known = placed.get(rel.toString('latin1'));
    if (known !== undefined) {
      serial[i] = known;
      continue;
    }
    notPlaced[i] = 1;
    try {
      serial[i] = to.resolve(parts(rel), rel.toString('utf8')).serial;
    } catch {
      keep[i] = 0;
      foreign = true;
    }
  }
  const racy = racyEntries(now, cs.oldIndex, cache, notPlaced, readFromMs);
  // What this call wrote and the walk found within its ctime's tick is marked racy too, instead
  // of waited for: a reconciling commit would hold the write lock meanwhile. The next commit
  // reads those files again; status confirms them and writes them back (racy.ts).
  const placedNow = new Uint8Array(now.count);
  for (let i = 1; i < now.count; i++) if (cs.changed[i] && !notPlaced[i]) placedNow[i] = 1;
  const marked = smudgeRacy(now, placedNow, walkFromMs).size;
  const top = Math.max(cache.maxSerial, maxSerial(store, to));
  const size = racy.includes(1) || marked !== now.size ? marked.map((v, i) => (racy[i] ? SMUDGED_SIZE : v)) : now.size;
  let next: StatCache = { ...now, size, serial, maxSerial: top };
  if (foreign) {
    const { walk, from } = compactWalk(next, keep);
    next = { ...walk, serial: Uint32Array.from(from, (i) => serial[i]!), maxSerial: top };
  }
  saveCache(store, workspaceId, next, foreign ? undefined : { old: cache, oldIndex: cs.oldIndex, changed: cs.changed });
  return { written };
}

/**
 * Entries of `now` to keep racy (racy.ts): of those this sync did not write (`notPlaced`), the
 * ones racy in `cache` and, with `readFromMs`, those a commit read within their ctime's tick.
 */
function racyEntries(now: StatCache, oldIndex: Int32Array, cache: StatCache, notPlaced: Uint8Array, readFromMs: number | undefined): Uint8Array {
  const racy = new Uint8Array(now.count);
  const read = readFromMs === undefined ? null : smudgeRacy(now, notPlaced, readFromMs);
  for (let i = 1; i < now.count; i++) {
    if (!notPlaced[i] || (now.kind[i] !== WalkKind.File && now.kind[i] !== WalkKind.Symlink)) continue;
    const j = oldIndex[i]!;
    if ((j >= 0 && isSmudged(cache, j)) || (read !== null && read.size[i] === SMUDGED_SIZE)) racy[i] = 1;
  }
  return racy;
}
