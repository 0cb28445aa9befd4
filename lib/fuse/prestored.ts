/**
 * Content a mount stored ahead of its commit (prestore.ts), by serial, with what makes it still
 * the file's content when the commit comes: the file's edit number (content.ts FileData.edit),
 * the stored file offered as its delta base (-1: none), and the gc epoch of the transaction that
 * stored it (lib/store/gc-epoch.ts). Packed as StoredContents is (a whole-tree change has
 * ~85,000), the three numbers in typed arrays beside each entry rather than in tables of their own.
 */
import type { StoredContent } from './content.js';
import { StoredContents } from './stored-contents.js';

/** Entries per block of tags (edit, base, epoch). */
const BLOCK = 2048;

class TaggedContents extends StoredContents {
  private readonly tags: Float64Array[] = [];

  tag(serial: number, c: StoredContent, edit: number, base: number, epoch: number): void {
    const n = this.set(serial, c);
    const b = Math.floor(n / BLOCK);
    while (this.tags.length <= b) this.tags.push(new Float64Array(3 * BLOCK));
    const at = 3 * (n % BLOCK);
    const t = this.tags[b]!;
    t[at] = edit;
    t[at + 1] = base;
    t[at + 2] = epoch;
  }

  /** The tags of `serial` ([edit, base, epoch] at the returned offset of the returned array), if set. */
  tagsOf(serial: number): { t: Float64Array; at: number } | undefined {
    const n = this.entryOf(serial);
    return n === undefined ? undefined : { t: this.tags[Math.floor(n / BLOCK)]!, at: 3 * (n % BLOCK) };
  }
}

export class Prestored {
  private contents = new TaggedContents();

  get size(): number {
    return this.contents.size;
  }

  set(serial: number, c: StoredContent, edit: number, base: number, epoch: number): void {
    this.contents.tag(serial, c, edit, base, epoch);
  }

  /** Whether content was stored for `serial` as of edit `edit` with delta base `base` (at any epoch). */
  holds(serial: number, edit: number, base: number): boolean {
    const g = this.contents.tagsOf(serial);
    return g !== undefined && g.t[g.at] === edit && g.t[g.at + 1] === base;
  }

  /**
   * The content stored for `serial` if it is still the file's (same edit, same delta base) and
   * nothing was deleted from the Store since (same gc epoch), as a view (see StoredContents.view).
   */
  valid(serial: number, edit: number, base: number, epoch: number): StoredContent | undefined {
    const g = this.contents.tagsOf(serial);
    if (g === undefined || g.t[g.at] !== edit || g.t[g.at + 1] !== base || g.t[g.at + 2] !== epoch) return undefined;
    return this.contents.view(serial);
  }

  clear(): void {
    if (this.contents.size > 0) this.contents = new TaggedContents();
  }
}
