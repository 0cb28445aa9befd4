/**
 * A staging ObjectWriter's bookkeeping (Store.writeStaged): the writes it keeps until the write
 * lock is taken, and what they rely on that another connection may change meanwhile.
 */
import { deltaBases } from './object-id.js';
import type { Pending } from './object-groups.js';

export class Staging {
  /** Rows completed while staging, to write under the lock (in order). */
  readonly writes: (() => void)[] = [];
  /** Ids found stored and not written again. */
  private readonly reused: Buffer[] = [];

  /** `id` was found stored (a copy is kept: a chunk's id is a view of its caller's reused buffer). */
  found(id: Buffer): void {
    this.reused.push(Buffer.from(id));
  }

  /**
   * Whether the writes can run as they were staged: every object found stored then still is
   * (gc may have deleted it since); so are the stored bases of the deltas among `open` (its
   * staged objects) and the dictionary it used (found too); and no other writer has stored one
   * of them since (its row would hold a second copy).
   */
  valid(open: Map<string, Pending>, stored: (id: Buffer) => boolean): boolean {
    for (const id of this.reused) if (!stored(id)) return false;
    for (const p of open.values()) {
      if (stored(p.id)) return false;
      if (!p.delta) continue;
      for (const b of deltaBases(p.delta.base)) if (!open.has(b.toString('latin1')) && !stored(b)) return false;
    }
    return true;
  }
}
