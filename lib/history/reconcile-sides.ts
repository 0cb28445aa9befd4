/**
 * One side's changes in a reconciliation (reconcile.ts): the page-tree diff of base → side,
 * indexed by the paths it concerns.
 */
import type { Store } from '../store/store.js';
import { diffStates, type DiffEntry } from './diff.js';

/** One side's changes since the base, by the paths they concern. */
export class SideChanges {
  /** Base path → the entry that modified, deleted or renamed away what was there. */
  readonly fate = new Map<string, DiffEntry>();
  /** Path in this side's state → the entry that put something there (added, modified, renamed). */
  readonly now = new Map<string, DiffEntry>();
  /** Directories this side renamed: old path → new path. */
  readonly dirRenames = new Map<string, string>();
  readonly entries: DiffEntry[];
  /** Paths this side added or renamed into, sorted: to find what sits under a directory. */
  readonly arrived: string[];

  constructor(store: Store, from: Buffer, to: Buffer) {
    this.entries = diffStates(store, from, to, { limit: Number.MAX_SAFE_INTEGER }).entries;
    const arrived: string[] = [];
    for (const e of this.entries) {
      if (e.change === 'modified' || e.change === 'deleted') this.fate.set(e.path, e);
      if (e.change === 'renamed') {
        this.fate.set(e.oldPath!, e);
        if (e.kind === 'dir') this.dirRenames.set(e.oldPath!, e.path);
      }
      if (e.change !== 'deleted') this.now.set(e.path, e);
      if (e.change === 'added' || e.change === 'renamed') arrived.push(e.path);
    }
    this.arrived = arrived.sort();
  }

  /** A rename that only follows its directory's rename (same name, moved with the parent). */
  implied(e: DiffEntry): boolean {
    if (e.change !== 'renamed') return false;
    const [od, on] = split(e.oldPath!);
    const [nd, nn] = split(e.path);
    return on === nn && od !== '' && this.dirRenames.get(od) === nd;
  }

  /** Where a base path is in this side's state (null: deleted). */
  pathOf(basePath: string): string | null {
    const e = this.fate.get(basePath);
    if (!e || e.change === 'modified') return basePath;
    return e.change === 'deleted' ? null : e.path;
  }

  /** Paths this side added or renamed into at or below `dir`. */
  arrivedUnder(dir: string): string[] {
    const prefix = `${dir}/`;
    let lo = 0;
    let hi = this.arrived.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.arrived[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    for (let i = lo; i < this.arrived.length && this.arrived[i]!.startsWith(prefix); i++) out.push(this.arrived[i]!);
    return out;
  }
}

export function split(path: string): [string, string] {
  const i = path.lastIndexOf('/');
  return i < 0 ? ['', path] : [path.slice(0, i), path.slice(i + 1)];
}

export function parts(path: string): Buffer[] {
  return path === '' ? [] : path.split('/').map((p) => Buffer.from(p, 'utf8'));
}

