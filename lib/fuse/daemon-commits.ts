/**
 * The daemon's commits: one at a time (a Store handle holds one write transaction), each with
 * control cells shared with the serving thread that runs it (overlay-commit.ts), through which a
 * stopping daemon aborts it and the heartbeats of client connections see it progress.
 */
import type { CommitNote } from '../history/index.js';
import type { Entry } from './daemon-served.js';
import type { ServedCommit } from './outcome.js';
import { CommitCell, commitCells } from './overlay-commit.js';

export class DaemonCommits {
  private chain: Promise<unknown> = Promise.resolve();
  /** Commits finished so far: with the running commits' steps, what heartbeats carry. */
  private done = 0;

  constructor(
    private readonly entries: () => Iterable<Entry>,
    private readonly stopping: () => boolean,
  ) {}

  /** Changes whenever a running commit stores more, and when one ends. */
  progress(): number {
    let n = this.done;
    for (const e of this.entries()) if (e.cells) n += Atomics.load(e.cells, CommitCell.Done);
    return n;
  }

  /** Asks the running commit of `e` to stop at its next record and waits for it (it stores nothing). */
  async abort(e: Entry): Promise<void> {
    if (e.cells) Atomics.store(e.cells, CommitCell.Abort, 1);
    if (e.committing) await e.committing.catch(() => {});
  }

  /** Runs the commit of `e` after those before it; `e.committing` and `e.cells` are set meanwhile. */
  async run(e: Entry, note: CommitNote, strict: boolean): Promise<ServedCommit> {
    const cells = commitCells();
    const run = this.chain.then(() => {
      // A shutdown that began while this commit waited its turn: it does not start.
      if (this.stopping()) Atomics.store(cells, CommitCell.Abort, 1);
      e.cells = cells;
      return e.server.commit(note, strict, cells);
    });
    this.chain = run.catch(() => {});
    e.committing = run;
    try {
      return await run;
    } finally {
      if (e.cells === cells) e.cells = null;
      e.committing = null;
      this.done++;
    }
  }
}
