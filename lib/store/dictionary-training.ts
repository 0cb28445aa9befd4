/**
 * Training the Store's first zstd dictionary inside the transaction that writes enough small
 * content to train one (docs/FORMAT.md "Format 10"). An import of a large tree holds its first
 * content groups back, uncompressed and bounded (HOLD_BYTES), until a sample of them trains a
 * dictionary; then the held groups and every later one are compressed with it. Without this, the
 * first import of a Store (most of its small files) was compressed without any dictionary.
 * The training itself runs on a worker thread (BackgroundTraining) while the import goes on,
 * holding what it writes meanwhile (bounded too: past HOLD_WHILE_TRAINING bytes, or a chunk row
 * that no longer fits, it waits for the dictionary). The samples are the groups held when the
 * hold was full, as before, so the same files in the same order train the same dictionary.
 * Everything stays inside the writer's transaction, so a SIGKILL loses the import and nothing
 * else.
 */
import type { BackgroundTraining } from '../native/zstd-train-thread.js';
import { DictionarySampler, SAMPLER_MIN_SEEN, trainInBackground, trainOn } from './dictionary.js';
import type { Pending } from './object-groups.js';

/** A sealed content group held back until the dictionary is trained. */
export interface HeldGroup {
  live: Pending[];
  at: number[];
  data: Buffer;
}

/**
 * Content held before training, at most: on the real-tree fixture the first 4,000 small files
 * of an import are 20–30 MB. Reached first (large small files), training starts early.
 */
export const HOLD_BYTES = 32 * 1024 * 1024;
/** Chunk rows of large files held meanwhile, at most (beyond it they are written without the dictionary). */
export const HOLD_CHUNK_BYTES = 48 * 1024 * 1024;
/** Small content objects an import holds back before it trains: enough for a representative sample. */
export const HOLD_SEEN = 4000;
/** Content held in all, at most, while the dictionary trains: beyond it the import waits for it. */
export const HOLD_WHILE_TRAINING = 2 * HOLD_BYTES;
/** Held objects are samples cut to this many bytes. */
const HOLD_SAMPLE_BYTES = 16 * 1024;
/**
 * Every SAMPLE_EVERY-th held object is a sample (2,000 of the 4,000: ~8 MB). On the real-tree
 * slice half the samples trained a dictionary that stored the small files 0.7 % larger in 45 %
 * of the training's CPU; cutting each to 8 KiB instead cost 1.2 % for 25 % less CPU
 * (docs/DECISIONS.md).
 */
const SAMPLE_EVERY = 2;
const MIN_SAMPLE_BYTES = 256;

/** The sampling (and, for an import, the holding back) of one transaction's small content. */
export class DictionaryTraining {
  private readonly sampler = new DictionarySampler();
  holding = false;
  private heldBytes = 0;
  private seen = 0;
  readonly held: HeldGroup[] = [];
  /** Writers of the chunk rows held back, in write order. */
  readonly heldRows: (() => void)[] = [];
  private heldChunkBytes = 0;
  /** The training started on a worker thread (start), or null when the held samples train none. */
  private job: BackgroundTraining | null | undefined;

  /**
   * An import of `entries` walk entries: fewer than SAMPLER_MIN_SEEN cannot train (each entry is
   * at most one small object), so nothing is sampled; more hold content back until trained.
   */
  forImport(entries: number): DictionaryTraining | undefined {
    if (entries < SAMPLER_MIN_SEEN) return undefined;
    this.holding = true;
    return this;
  }

  offer(data: Uint8Array): void {
    // A hold samples what it holds: every object, no copy.
    if (this.holding) {
      if (data.length >= MIN_SAMPLE_BYTES) this.seen++;
    } else this.sampler.offer(data);
  }

  /** Takes a sealed content group while holding; false when it is to be compressed now. */
  hold(group: HeldGroup): boolean {
    if (!this.holding) return false;
    this.held.push(group);
    this.heldBytes += group.data.length;
    return true;
  }

  /** Takes the writer of a chunk row of `bytes` while holding; false when the row is to be written now. */
  holdRow(bytes: number, write: () => void): boolean {
    if (!this.holding || this.heldChunkBytes + bytes > HOLD_CHUNK_BYTES) return false;
    this.heldRows.push(write);
    this.heldChunkBytes += bytes;
    return true;
  }

  /** True once enough is held to train now rather than at the end of the transaction. */
  get ready(): boolean {
    return this.holding && (this.seen >= HOLD_SEEN || this.heldBytes >= HOLD_BYTES);
  }

  /** Starts training on what is held now, on a worker thread (once). */
  start(): void {
    if (this.job === undefined) this.job = this.holding ? (trainInBackground(this.heldSamples()) ?? null) : null;
  }

  get started(): boolean {
    return this.job !== undefined;
  }

  /**
   * True once a started training has its dictionary, or when the writer must wait for it: the
   * hold has reached HOLD_WHILE_TRAINING. Then train() returns at once or waits.
   */
  get due(): boolean {
    if (this.job === undefined) return false;
    return this.job === null || this.job.poll() !== undefined || this.heldBytes >= HOLD_WHILE_TRAINING;
  }

  /**
   * The dictionary of what was offered, once enough was (DictionarySampler.train); a hold that
   * filled HOLD_BYTES with fewer, larger files trains on what it has.
   */
  train(): Buffer | undefined {
    if (!this.holding) return this.sampler.train();
    // Started on a worker thread: its dictionary, waited for if need be.
    if (this.job !== undefined) return this.job?.wait() ?? undefined;
    if (this.seen < SAMPLER_MIN_SEEN && this.heldBytes < HOLD_BYTES) return undefined;
    return trainOn(this.heldSamples());
  }

  /** Every SAMPLE_EVERY-th held object as a sample, each cut to HOLD_SAMPLE_BYTES (views, no copies). */
  private heldSamples(): Buffer[] {
    const samples: Buffer[] = [];
    let n = 0;
    for (const g of this.held) {
      g.live.forEach((p, i) => {
        if (p.length >= MIN_SAMPLE_BYTES && n++ % SAMPLE_EVERY === 0) samples.push(g.data.subarray(g.at[i]!, g.at[i]! + Math.min(p.length, HOLD_SAMPLE_BYTES)));
      });
    }
    return samples;
  }
}
