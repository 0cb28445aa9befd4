/**
 * What changed in a materialized Workspace since it last matched a stored state: a native walk
 * plus lstat of every path (lib/native walkTree), compared with the stat cache. Only paths whose
 * stat changed are re-read later. When paths moved, the whole walk is diffed (walk-diff.ts, on
 * the path matching of walk-match.ts); stats are compared field by field on typed arrays: no
 * per-path strings or objects unless something changed.
 */
import { LayerFsError } from '../errors.js';
import { walkRelPath, walkTreeAgainst, walkTreeAgainstSync, WALK_KIND_NAMES, type WalkAgainst } from '../native/walk.js';
import { ROOT_SERIAL } from '../store/index.js';
import type { StatCache } from './cache.js';
import { addParent, diffWalk, type ChangedSerial, type ChangeSet } from './walk-diff.js';

export { diffWalk, type ChangeSet } from './walk-diff.js';
export { compactWalk, matchPaths } from './walk-match.js';

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
  const changedSerials = new Map<number, ChangedSerial>();
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
      for (let i = serial.indexOf(s, 1); i >= 0; i = serial.indexOf(s, i + 1)) addParent(c, serial[cache.parent[i]!]!);
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

const SLASH = Buffer.from('/');
