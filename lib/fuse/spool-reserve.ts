/**
 * Spool files made ahead of their use. A serving thread that spools a file must otherwise create
 * its file first, and on this disk a create cost 25 µs alone and ~100 µs in the middle of an
 * untar (3.0 s of the serving thread's samples over three untars of 10,000 files), while the
 * kernel and the writer waited for the reply. The serving thread asks the daemon's thread for
 * empty files under the names its spools will take (spool.ts `spoolFactory`), and then only
 * opens one: made ahead, the same file is opened in ~5 µs.
 *
 * The two sides share one counter: every spool number below it has its file. A spool whose file
 * is not made yet creates it as before; whichever side comes second finds it there (EEXIST), and
 * both take it as made. Only these two threads create files in the private spool directory.
 */
import { open } from 'node:fs/promises';
import { constants as fsc } from 'node:fs';
import type { SpoolReserve } from './spool.js';

/** What a serving thread sends when it wants files made. */
export interface SpoolRequest {
  type: 'spools';
  made: SharedArrayBuffer;
  prefix: string;
  from: number;
  to: number;
}

/** The serving thread's side: `send` passes each request to the daemon's thread. */
export function spoolReserve(send: (r: SpoolRequest) => void): SpoolReserve {
  const made = new SharedArrayBuffer(4);
  const counter = new Int32Array(made);
  return {
    made: () => Atomics.load(counter, 0),
    ask: (prefix, from, to) => send({ type: 'spools', made, prefix, from, to }),
  };
}

/** The daemon's side of one mount: makes the files asked for, in order, one at a time on the thread pool. */
export class SpoolMaker {
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;

  make(r: SpoolRequest): void {
    this.chain = this.chain.then(() => this.makeRange(r));
  }

  /** No file is made after this; resolves once the one being made (if any) is done. */
  stop(): Promise<void> {
    this.stopped = true;
    return this.chain;
  }

  private async makeRange({ made, prefix, from, to }: SpoolRequest): Promise<void> {
    const counter = new Int32Array(made);
    for (let n = from; n < to && !this.stopped; n++) {
      try {
        const fh = await open(prefix + n.toString(36), fsc.O_RDWR | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
        await fh.close();
      } catch (e) {
        // Made by the serving thread first: made all the same. Anything else (the directory
        // gone with its mount, ENOSPC): the serving thread creates its files itself again.
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
          this.stopped = true;
          return;
        }
      }
      Atomics.store(counter, 0, n + 1);
    }
  }
}
