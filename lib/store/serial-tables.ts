/**
 * Sets and maps keyed by serial: a FUSE overlay's per-inode bookkeeping (its inodes, dirty
 * records, deleted serials, replaced files), the kernel's lookup counts, and the namespace
 * editor's changed records. A whole-tree change puts ~90,000 serials in each; a JavaScript Map or
 * Set of that size takes 20–28 bytes per slot, and V8 grows it to twice what it holds (four of
 * them came to 15.5 MiB of the mount daemon's heap). Here a slot is 8 bytes of key (and 8 of
 * value), in typed arrays outside the collector's work: open addressing with linear probing, at
 * most three quarters full, deletions shifting the entries after them back (no tombstones),
 * halving once an eighth full (a Workspace's whole-tree change comes and goes with its commit).
 * Keys are serials: integers from 0 to 2^53 − 1. Iteration order is the table's, not insertion
 * order; a table must not change while it is iterated.
 */

const EMPTY = -1;
const MIN_BITS = 4;

/** Only serials are kept; asking for anything else (a kernel's node id past 2^53) finds nothing. */
function isSerial(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

function checkSerial(n: number): void {
  if (!isSerial(n)) throw new RangeError(`not a serial: ${n}`);
}

/** What a table's values are kept in: numbers, objects, or none (a set). */
type Values = 'numbers' | 'objects' | null;
type Slots = Float64Array | unknown[];

class SerialTable {
  protected keys: Float64Array;
  /** The values, slot for slot (a map's), or null (a set's): they move with their keys. */
  protected vals: Slots | null;
  private bits = MIN_BITS;
  private count = 0;

  constructor(private readonly holds: Values) {
    this.keys = new Float64Array(1 << MIN_BITS).fill(EMPTY);
    this.vals = this.newVals(1 << MIN_BITS);
  }

  private newVals(n: number): Slots | null {
    return this.holds === 'numbers' ? new Float64Array(n) : this.holds === 'objects' ? new Array<unknown>(n).fill(undefined) : null;
  }

  get size(): number {
    return this.count;
  }

  has(serial: number): boolean {
    return isSerial(serial) && this.keys[this.slot(serial)] === serial;
  }

  delete(serial: number): boolean {
    if (!isSerial(serial)) return false;
    const i = this.slot(serial);
    if (this.keys[i] !== serial) return false;
    this.removeAt(i);
    return true;
  }

  /** Empties the table and gives its memory back. */
  clear(): void {
    this.count = 0;
    this.bits = MIN_BITS;
    this.keys = new Float64Array(1 << MIN_BITS).fill(EMPTY);
    this.vals = this.newVals(1 << MIN_BITS);
  }

  /** Serials in the table's order. */
  *[Symbol.iterator](): IterableIterator<number> {
    const keys = this.keys;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== EMPTY) yield keys[i]!;
  }

  /** The home slot: the high bits of a multiplicative hash of the serial's two 32-bit halves. */
  private home(serial: number): number {
    const lo = serial >>> 0;
    const hi = (serial - lo) / 4294967296;
    return Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> (32 - this.bits);
  }

  /** Where `serial` (a serial: isSerial) is, or the empty slot where it would go. */
  protected slot(serial: number): number {
    const mask = this.keys.length - 1;
    let i = this.home(serial);
    for (;;) {
      const k = this.keys[i]!;
      if (k === serial || k === EMPTY) return i;
      i = (i + 1) & mask;
    }
  }

  /** A map's value of `serial`, or undefined. */
  protected valueOf(serial: number): unknown {
    if (!isSerial(serial)) return undefined;
    const i = this.slot(serial);
    return this.keys[i] === serial ? this.vals![i] : undefined;
  }

  /** Sets a map's value of `serial`. */
  protected put(serial: number, value: unknown): void {
    checkSerial(serial);
    let i = this.slot(serial);
    if (this.keys[i] !== serial) i = this.insertAt(i, serial);
    this.vals![i] = value as number;
  }

  /** Puts `serial` in the empty slot `i` (from slot()); returns its slot after any growth. */
  protected insertAt(i: number, serial: number): number {
    this.keys[i] = serial;
    this.count++;
    if (this.count * 4 <= this.keys.length * 3) return i;
    this.resize(this.bits + 1);
    return this.slot(serial);
  }

  private removeAt(i: number): void {
    const keys = this.keys;
    const vals = this.vals;
    const mask = keys.length - 1;
    let hole = i;
    for (let j = (i + 1) & mask; keys[j] !== EMPTY; j = (j + 1) & mask) {
      const home = this.home(keys[j]!);
      // The entry at j may move into the hole unless its home lies cyclically in (hole, j].
      const stays = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (stays) continue;
      keys[hole] = keys[j]!;
      if (vals) vals[hole] = vals[j]!;
      hole = j;
    }
    keys[hole] = EMPTY;
    if (vals && this.holds === 'objects') vals[hole] = undefined; // nothing kept alive by a free slot
    this.count--;
    if (this.bits > MIN_BITS && this.count * 8 <= keys.length) this.resize(this.bits - 1);
  }

  /** Holds exactly `keys` (distinct serials) with `vals` slot for slot, at the size they need. */
  protected rebuild(keys: number[], vals: unknown[]): void {
    let bits = MIN_BITS;
    while (keys.length * 4 > (1 << bits) * 3) bits++;
    this.bits = bits;
    this.count = keys.length;
    this.keys = new Float64Array(1 << bits).fill(EMPTY);
    this.vals = this.newVals(1 << bits);
    for (let j = 0; j < keys.length; j++) {
      const i = this.slot(keys[j]!);
      this.keys[i] = keys[j]!;
      if (this.vals) this.vals[i] = vals[j];
    }
  }

  private resize(bits: number): void {
    const oldKeys = this.keys;
    const oldVals = this.vals;
    this.bits = bits;
    this.keys = new Float64Array(1 << bits).fill(EMPTY);
    const vals = this.newVals(1 << bits);
    this.vals = vals;
    for (let j = 0; j < oldKeys.length; j++) {
      const k = oldKeys[j]!;
      if (k === EMPTY) continue;
      const i = this.slot(k);
      this.keys[i] = k;
      if (vals) vals[i] = oldVals![j]!;
    }
  }
}

export class SerialSet extends SerialTable {
  constructor() {
    super(null);
  }

  add(serial: number): this {
    checkSerial(serial);
    const i = this.slot(serial);
    if (this.keys[i] !== serial) this.insertAt(i, serial);
    return this;
  }
}

/** Serial → a number (a serial, a count). */
export class SerialMap extends SerialTable {
  constructor() {
    super('numbers');
  }

  get(serial: number): number | undefined {
    return this.valueOf(serial) as number | undefined;
  }

  set(serial: number, value: number): this {
    this.put(serial, value);
    return this;
  }
}

/**
 * Serial → an object (the overlay's inodes): a slot is 8 bytes of key and 8 of reference, where
 * a Map of the whole-tree change's ~97,000 inodes took 7 MiB of the daemon's heap.
 */
export class SerialObjectMap<T extends object> extends SerialTable {
  constructor() {
    super('objects');
  }

  get(serial: number): T | undefined {
    return this.valueOf(serial) as T | undefined;
  }

  set(serial: number, value: T): this {
    this.put(serial, value);
    return this;
  }

  /**
   * Keeps the entries `keep` says yes to, in one pass: deleting most of a large table one entry
   * at a time shifts each cluster back again and again (a commit's rebase let ~97,000 nodes go
   * that way in 0.5 s).
   */
  retain(keep: (value: T) => boolean): void {
    const keys: number[] = [];
    const vals: T[] = [];
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] === EMPTY) continue;
      const v = this.vals![i] as T;
      if (keep(v)) {
        keys.push(this.keys[i]!);
        vals.push(v);
      }
    }
    this.rebuild(keys, vals);
  }

  /** Calls `fn` with each value, making nothing; the table must not change meanwhile. */
  forEach(fn: (value: T) => void): void {
    for (let i = 0; i < this.keys.length; i++) if (this.keys[i] !== EMPTY) fn(this.vals![i] as T);
  }

  /** The values, as an array made now: the table may change while the caller goes through it. */
  values(): T[] {
    const out: T[] = [];
    const keys = this.keys;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== EMPTY) out.push(this.vals![i] as T);
    return out;
  }
}
