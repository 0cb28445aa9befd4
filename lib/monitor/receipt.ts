/**
 * Receipts: what every public operation reports besides its outcome. Semantic growth (the
 * canonical bytes a new state needed) is kept apart from allocated growth (what the Store file
 * grew by), because existing free pages can absorb new objects and WAL checkpoints lag.
 */
export interface Receipt {
  operation: string;
  outcome: string;
  ms: number;
  phases: Record<string, number>;
  objectsInserted: number;
  objectsReused: number;
  bytesInserted: number;
  bytesReused: number;
  /** Canonical bytes this operation added to the Store. */
  semanticGrowth: number;
  /** Growth of the Store file (database pages in use, in bytes). */
  allocatedGrowth: number;
}

export class Monitor {
  private readonly recent: Receipt[] = [];

  constructor(private readonly keep = 256) {}

  record(r: Receipt): Receipt {
    this.recent.push(r);
    if (this.recent.length > this.keep) this.recent.shift();
    return r;
  }

  receipts(): readonly Receipt[] {
    return this.recent;
  }
}
