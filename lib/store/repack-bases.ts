/**
 * Delta base selection of a repack, the way git's pack heuristics choose (docs/DESIGN.md
 * "Repack"): the small files a repack rewrites are sorted by name (their path's last component)
 * and then by size, largest first; each is tried against the other versions found at its path,
 * the base it is a delta against now, and the SELECT_WINDOW objects before it in that order, and
 * becomes a delta against the best of them when that is smaller than the object compressed whole
 * with the Store's dictionary. Chains stay within SELECT_DEPTH links. The plan only says what to
 * try: repack-batch.ts writes each delta in its object's batch after checking, against the
 * Store as it is then, that the chain is acyclic and bounded, and stores the object whole if not.
 */
import { zstdCompress, zstdCompressWith } from '../native/zstd.js';
import { LayerFsError } from '../errors.js';
import type { StoreAccess as Store } from './access.js';
import { Codec, DELTA_MIN_SIZE, looksRandom } from './codec.js';
import type { Dictionary } from './dictionary.js';
import { ObjectKind } from './object-id.js';
import { collectNames } from './repack-names.js';

/** Candidates before an object in the sorted order that it is tried against (git's default is 10, --aggressive 250). */
export const SELECT_WINDOW = 10;
/** Delta links from a repacked small file to a whole object, at most. */
export const SELECT_DEPTH = 2;
/** Small files a selection plans at most (~200 bytes each while it runs); the rest keep repack's other rules. */
export const SELECT_MAX_OBJECTS = 500_000;
/** zstd level of the trial deltas that rank candidates (the delta written is DELTA_LEVEL). */
const TRIAL_LEVEL = 1;
/** zstd level of the estimate of an object's size compressed whole. */
const ESTIMATE_LEVEL = 3;
/**
 * A delta is planned when its trial is at most this fraction of the whole estimate: a member of
 * a 128 KiB level-19 group with the dictionary costs less than a level-3 frame of its own.
 */
const PLAN_KEEP = 0.8;
/** A candidate whose size is outside [size / SIZE_SPREAD, size × SIZE_SPREAD] is not tried. */
const SIZE_SPREAD = 2;
/** A trial at most this fraction of the estimate ends the search early. */
const GOOD_ENOUGH = 0.05;

/** What the plan says of one small file: a delta against `base` (limit: its largest size), or whole. */
export interface SelectedForm {
  base: Buffer | null;
  /** Bytes the written delta may take at most (the whole estimate). */
  limit: number;
  depth: number;
}

/** One small file of the rows a repack rewrites, as the index has it. */
export interface SelectItem {
  id: Buffer;
  size: number;
  codec: number;
  base: Buffer | null;
}

interface Ranked extends SelectItem {
  name: string;
  path: string;
}

export interface Selection {
  forms: Map<string, SelectedForm>;
  /** Objects written by the repack's committed batches (repack-selected.ts): never moved again. */
  done: Set<string>;
  planned: number;
  ms: number;
}

/** The small files of rows up to `maxPack` that `rewritten(pack)` says this repack rewrites. */
export function selectionItems(store: Store, maxPack: number, rewritten: (pack: number) => boolean): SelectItem[] {
  return store.read(() => {
    const q = store.db.prepare('SELECT id, size, codec, base, pack FROM objects WHERE kind = ? AND pack <= ? LIMIT ?');
    const out: SelectItem[] = [];
    for (const r of q.iterate(ObjectKind.Blob, maxPack, SELECT_MAX_OBJECTS) as IterableIterator<SelectItem & { pack: number }>) {
      if (rewritten(r.pack)) out.push({ id: r.id, size: r.size, codec: r.codec, base: r.base });
    }
    return out;
  });
}

/** Bytes of objects a selection keeps decoded: the window's and a few versions'. */
class Bytes {
  private readonly held = new Map<string, Buffer | null>();
  constructor(private readonly store: Store) {}

  get(id: Buffer): Buffer | null {
    const key = id.toString('latin1');
    let b = this.held.get(key);
    if (b !== undefined) return b;
    try {
      b = this.store.objects.get(id, ObjectKind.Blob);
    } catch (e) {
      // A damaged object is neither planned nor a base: verify reports it.
      if (!(e instanceof LayerFsError)) throw e;
      b = null;
    }
    this.held.set(key, b);
    if (this.held.size > 4 * SELECT_WINDOW) this.held.delete(this.held.keys().next().value!);
    return b;
  }
}

function sortKey(a: Ranked, b: Ranked): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  if (a.size !== b.size) return b.size - a.size;
  return Buffer.compare(a.id, b.id);
}

/** The plan for `items` (module comment). */
export function selectBases(store: Store, items: SelectItem[], dict: Dictionary | undefined): Selection {
  const t0 = performance.now();
  const names = collectNames(store);
  const ranked: Ranked[] = items.map((it) => {
    const path = names.pathOf.get(it.id.toString('latin1')) ?? '';
    return { ...it, path, name: path.slice(path.lastIndexOf('/') + 1) };
  });
  ranked.sort(sortKey);
  const forms = new Map<string, SelectedForm>();
  const bytes = new Bytes(store);
  const window: Ranked[] = [];
  let planned = 0;
  const estimate = (data: Buffer) => zstdCompressWith(data, ESTIMATE_LEVEL, dict).length;
  for (const it of ranked) {
    const data = bytes.get(it.id);
    const key = it.id.toString('latin1');
    if (!data || it.size < DELTA_MIN_SIZE) {
      forms.set(key, { base: null, limit: 0, depth: data ? 0 : SELECT_DEPTH });
      continue;
    }
    // Random bytes are stored raw and share nothing with other files' bytes, but an edited
    // version shares almost all of them with its other versions: those (and its current base)
    // are tried, the window is not.
    const random = looksRandom(data);
    const whole = random ? data.length : estimate(data);
    let best: { base: Buffer; size: number; depth: number } | undefined;
    const tried = new Set<string>([key]);
    const trial = (cand: Buffer, lenient: boolean): void => {
      const k = cand.toString('latin1');
      const f = forms.get(k);
      if (tried.has(k) || !f || f.depth >= SELECT_DEPTH) return;
      tried.add(k);
      const base = bytes.get(cand);
      if (!base || (!lenient && (base.length * SIZE_SPREAD < it.size || base.length > it.size * SIZE_SPREAD))) return;
      const size = zstdCompress(data, TRIAL_LEVEL, base).length;
      if (!best || size < best.size) best = { base: cand, size, depth: f.depth + 1 };
    };
    // The same path's other versions and the current base first, then the window.
    for (const v of names.versions.get(it.path) ?? []) trial(v, true);
    if (it.codec === Codec.Delta && it.base?.length === 32) trial(it.base, true);
    for (let w = random ? -1 : window.length - 1; w >= 0 && !(best && best.size <= whole * GOOD_ENOUGH); w--) trial(window[w]!.id, false);
    if (best && best.size <= whole * PLAN_KEEP) {
      forms.set(key, { base: best.base, limit: whole, depth: best.depth });
      planned++;
    } else forms.set(key, { base: null, limit: 0, depth: 0 });
    if (random) continue;
    window.push(it);
    if (window.length > SELECT_WINDOW) window.shift();
  }
  return { forms, done: new Set(), planned, ms: performance.now() - t0 };
}
