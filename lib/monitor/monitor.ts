/**
 * Receipts: what every public operation reports besides its outcome. Semantic growth (the
 * canonical bytes a new state needed) is kept apart from allocated growth (what the Store file
 * grew by), because existing free pages can absorb new objects and WAL checkpoints lag.
 */
import { closeSync, constants as fsc, fstatSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { ensurePrivateDir, openPrivateFile } from './private-file.js';

/** What an operation wrote, in a receipt and summed over receipts. */
export interface WriteCounts {
  objectsInserted: number;
  objectsReused: number;
  bytesInserted: number;
  bytesReused: number;
  /** Canonical bytes this operation added to the Store. */
  semanticGrowth: number;
  /**
   * Growth of the database pages in use (page_count × page_size − free pages), in bytes, taken
   * inside the operation's own write transactions (after BEGIN IMMEDIATE, before COMMIT), so
   * other processes' writes are never counted. Can differ from semanticGrowth both ways: free
   * pages absorb new objects, and page headers and indexes add to them.
   */
  allocatedGrowth: number;
}

export interface Receipt extends WriteCounts {
  operation: string;
  outcome: string;
  ms: number;
  /**
   * Wall time (ms) by phase, for import (layerstack.init) and workspace.commit: walkRead,
   * chunkHash, write, publish — they add up to `ms`. Empty for other operations.
   */
  phases: Record<string, number>;
}

export interface OperationSummary extends WriteCounts {
  operation: string;
  count: number;
  outcomes: Record<string, number>;
  msTotal: number;
  msMedian: number;
  msP90: number;
  msMax: number;
  /** Wall time by phase (walkRead, chunkHash, write, publish), summed over the receipts that have it. */
  phasesMs: Record<string, number>;
}

export interface MonitorSnapshot {
  receipts: number;
  since: string | null;
  operations: OperationSummary[];
}

function readJournal(path: string): string {
  const fd = openPrivateFile(path, fsc.O_RDONLY);
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** The journal is trimmed to its newer half past this size. */
const JOURNAL_LIMIT = 4 * 1024 * 1024;

/**
 * Keeps the recent receipts of a Client. With a journal path, receipts are also appended there
 * (one JSON line each, never inside the Store), so a stateless CLI can summarise recent work.
 */
export class Monitor {
  private readonly recent: (Receipt & { at: string })[] = [];

  constructor(
    private readonly journal?: string,
    private readonly keep = 256,
  ) {}

  record<R extends Receipt>(r: R): R {
    const entry = { ...r, at: new Date().toISOString() };
    this.recent.push(entry);
    if (this.recent.length > this.keep) this.recent.shift();
    if (this.journal) this.append(entry);
    return r;
  }

  private append(entry: Receipt & { at: string }): void {
    const line = JSON.stringify({ at: entry.at, operation: entry.operation, outcome: entry.outcome, ms: entry.ms, phases: entry.phases, objectsInserted: entry.objectsInserted, objectsReused: entry.objectsReused, bytesInserted: entry.bytesInserted, bytesReused: entry.bytesReused, semanticGrowth: entry.semanticGrowth, allocatedGrowth: entry.allocatedGrowth }) + '\n';
    try {
      // <store>.d may be in a directory others write (or root's view of another user's Store):
      // a planted symlink or FIFO is refused, never followed.
      ensurePrivateDir(dirname(this.journal!));
      const fd = openPrivateFile(this.journal!, fsc.O_WRONLY | fsc.O_APPEND | fsc.O_CREAT);
      let size: number;
      try {
        writeSync(fd, line);
        size = fstatSync(fd).size;
      } finally {
        closeSync(fd);
      }
      if (size > JOURNAL_LIMIT) {
        const text = readJournal(this.journal!);
        const tmp = `${this.journal}.${process.pid}.tmp`;
        const out = openPrivateFile(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL);
        try {
          writeSync(out, text.slice(text.indexOf('\n', text.length / 2) + 1));
        } finally {
          closeSync(out);
        }
        renameSync(tmp, this.journal!);
      }
    } catch {
      // Metrics must never fail an operation.
    }
  }

  receipts(): readonly Receipt[] {
    return this.recent;
  }

  /** Summary of the journal (or of this Client's receipts when there is no journal). */
  snapshot(): MonitorSnapshot {
    let all: (Receipt & { at: string })[] = this.recent;
    if (this.journal) {
      try {
        all = readJournal(this.journal)
          .split('\n')
          .filter((l) => l.trim())
          .flatMap((l) => {
            try {
              return [JSON.parse(l) as Receipt & { at: string }];
            } catch {
              return [];
            }
          });
      } catch {
        all = this.recent;
      }
    }
    const by = new Map<string, (Receipt & { at: string })[]>();
    for (const r of all) {
      const list = by.get(r.operation);
      if (list) list.push(r);
      else by.set(r.operation, [r]);
    }
    const operations = [...by.entries()].map(([operation, rs]): OperationSummary => {
      const ms = rs.map((r) => r.ms).sort((a, b) => a - b);
      const sum = (f: (r: Receipt) => number) => rs.reduce((a, r) => a + (f(r) || 0), 0);
      const outcomes: Record<string, number> = {};
      const phasesMs: Record<string, number> = {};
      for (const r of rs) {
        outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
        for (const [k, v] of Object.entries(r.phases ?? {})) if (typeof v === 'number') phasesMs[k] = (phasesMs[k] ?? 0) + v;
      }
      return {
        operation,
        count: rs.length,
        outcomes,
        msTotal: sum((r) => r.ms),
        msMedian: ms[Math.floor((ms.length - 1) / 2)] ?? 0,
        msP90: ms[Math.floor((ms.length - 1) * 0.9)] ?? 0,
        msMax: ms[ms.length - 1] ?? 0,
        phasesMs,
        objectsInserted: sum((r) => r.objectsInserted),
        objectsReused: sum((r) => r.objectsReused),
        bytesInserted: sum((r) => r.bytesInserted),
        bytesReused: sum((r) => r.bytesReused),
        semanticGrowth: sum((r) => r.semanticGrowth),
        allocatedGrowth: sum((r) => r.allocatedGrowth),
      };
    });
    return { receipts: all.length, since: all[0]?.at ?? null, operations };
  }
}
