/**
 * What a commit stored per changed file (form, content id, size), held until the overlay rebases
 * onto the published state. Kept packed: a StoredContent object with a 32-byte id Buffer costs
 * ~170 bytes of heap, and each small id Buffer also holds on to the 8 KiB pool slab it was cut
 * from; a whole-tree commit changes ~85,000 files, which came to ~29 MiB of a mount daemon's
 * memory for the length of the commit (docs/BENCHMARKS.md). Here an entry costs its id's bytes
 * and a few numbers; get() makes the object when asked.
 */
import type { ContentForm } from '../store/index.js';
import type { StoredContent } from './content.js';

const ID = 32;
/** Ids per block: blocks are allocated as entries come, not all at once. */
const BLOCK_IDS = 2048;

export class StoredContents {
  /** Serial → entry number. */
  private readonly index = new Map<number, number>();
  private readonly blocks: Buffer[] = [];
  private readonly forms: ContentForm[] = [];
  private readonly sizes: number[] = [];
  /** Per entry: 1 when it has an id (an empty file has none). */
  private readonly hasId: number[] = [];

  get size(): number {
    return this.index.size;
  }

  has(serial: number): boolean {
    return this.index.has(serial);
  }

  set(serial: number, c: StoredContent): void {
    if (c.id !== null && c.id.length !== ID) throw new RangeError(`content id of ${c.id.length} bytes`);
    let n = this.index.get(serial);
    if (n === undefined) {
      n = this.sizes.length;
      this.index.set(serial, n);
      this.forms.push(c.form);
      this.sizes.push(c.size);
      this.hasId.push(0);
      if (n % BLOCK_IDS === 0) this.blocks.push(Buffer.allocUnsafeSlow(BLOCK_IDS * ID));
    }
    this.forms[n] = c.form;
    this.sizes[n] = c.size;
    this.hasId[n] = c.id === null ? 0 : 1;
    if (c.id !== null) c.id.copy(this.blocks[Math.floor(n / BLOCK_IDS)]!, (n % BLOCK_IDS) * ID);
  }

  /** The entry of `serial`; its id is a copy of its own (it may outlive this table). */
  get(serial: number): StoredContent | undefined {
    const n = this.index.get(serial);
    return n === undefined ? undefined : this.entry(n);
  }

  serials(): IterableIterator<number> {
    return this.index.keys();
  }

  private entry(n: number): StoredContent {
    let id: Buffer | null = null;
    if (this.hasId[n]) {
      const off = (n % BLOCK_IDS) * ID;
      id = Buffer.allocUnsafeSlow(ID);
      this.blocks[Math.floor(n / BLOCK_IDS)]!.copy(id, 0, off, off + ID);
    }
    return { form: this.forms[n]!, id, size: this.sizes[n]! };
  }
}
