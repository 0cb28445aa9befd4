/**
 * What a commit stored per changed file (form, content id, size), held until the overlay rebases
 * onto the published state. Kept packed: a StoredContent object with a 32-byte id Buffer costs
 * ~170 bytes of heap, and each small id Buffer also holds on to the 8 KiB pool slab it was cut
 * from; a whole-tree commit changes ~85,000 files, which came to ~29 MiB of a mount daemon's
 * memory for the length of the commit (docs/BENCHMARKS.md). Here an entry costs its id's bytes,
 * nine bytes of size and form, and a slot of a serial-keyed table; get() makes the object when
 * asked.
 */
import { SerialMap, type ContentForm } from '../store/index.js';
import type { StoredContent } from './content.js';

const ID = 32;
/** Entries per block: blocks are allocated as entries come, not all at once. */
const BLOCK = 2048;
/** In an entry's form byte: it has an id (an empty file has none). */
const HAS_ID = 0x80;

/** BLOCK entries, each field in a typed array of its own (outside the collector's work). */
interface Block {
  ids: Buffer;
  sizes: Float64Array;
  /** The form, with HAS_ID. */
  forms: Uint8Array;
}

export class StoredContents {
  /** Serial → entry number. */
  private readonly index = new SerialMap();
  private readonly blocks: Block[] = [];
  private count = 0;

  /** The entry number of `serial`, if set (numbers are dense from 0, in the order first set). */
  protected entryOf(serial: number): number | undefined {
    return this.index.get(serial);
  }

  get size(): number {
    return this.index.size;
  }

  has(serial: number): boolean {
    return this.index.has(serial);
  }

  /** Sets the entry of `serial` and returns its number. */
  set(serial: number, c: StoredContent): number {
    if (c.id !== null && c.id.length !== ID) throw new RangeError(`content id of ${c.id.length} bytes`);
    let n = this.index.get(serial);
    if (n === undefined) {
      n = this.count++;
      this.index.set(serial, n);
      if (n % BLOCK === 0) this.blocks.push({ ids: Buffer.allocUnsafeSlow(BLOCK * ID), sizes: new Float64Array(BLOCK), forms: new Uint8Array(BLOCK) });
    }
    const b = this.blocks[Math.floor(n / BLOCK)]!;
    const i = n % BLOCK;
    b.sizes[i] = c.size;
    b.forms[i] = c.form | (c.id === null ? 0 : HAS_ID);
    if (c.id !== null) c.id.copy(b.ids, i * ID);
    return n;
  }

  /** The entry of `serial`; its id is a copy of its own (it may outlive this table). */
  get(serial: number): StoredContent | undefined {
    const n = this.index.get(serial);
    return n === undefined ? undefined : this.entry(n, true);
  }

  /**
   * The entry of `serial` with its id a view of this table's bytes, for use while the table
   * lives and the entry is not set again (a commit's records: a copy each was 84,000 small
   * ArrayBuffers on a whole-tree commit, freed only by a full collection).
   */
  view(serial: number): StoredContent | undefined {
    const n = this.index.get(serial);
    return n === undefined ? undefined : this.entry(n, false);
  }

  serials(): IterableIterator<number> {
    return this.index[Symbol.iterator]();
  }

  private entry(n: number, copy: boolean): StoredContent {
    const b = this.blocks[Math.floor(n / BLOCK)]!;
    const i = n % BLOCK;
    let id: Buffer | null = null;
    if (b.forms[i]! & HAS_ID) {
      if (copy) {
        id = Buffer.allocUnsafeSlow(ID);
        b.ids.copy(id, 0, i * ID, (i + 1) * ID);
      } else {
        id = b.ids.subarray(i * ID, (i + 1) * ID);
      }
    }
    return { form: (b.forms[i]! & ~HAS_ID) as ContentForm, id, size: b.sizes[i]! };
  }
}
