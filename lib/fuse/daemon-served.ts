/**
 * How the daemon serves one mounted Workspace: in the mount's serving thread (kernel-worker.ts).
 * The daemon keeps one Entry per mount.
 */
import type { CommitNote } from '../history/index.js';
import type { KernelMount } from './kernel.js';
import type { ServedCommit, ServedState } from './outcome.js';
import type { FuseChanges, MountRecord } from './protocol.js';

/** One served Workspace. */
export interface WorkspaceServer {
  mount(): Promise<void>;
  unmount(): Promise<void>;
  /** `cells`: shared control cells (overlay-commit.ts) through which the daemon aborts the commit or watches it progress. */
  commit(note: CommitNote, strict: boolean, cells?: Int32Array): Promise<ServedCommit>;
  state(): Promise<ServedState>;
  changes(): Promise<FuseChanges>;
  dispose(): void;
}

/** The overlay lives in the mount's serving thread (kernel-worker.ts). */
export class WorkerServer implements WorkspaceServer {
  constructor(private readonly k: KernelMount) {}

  mount(): Promise<void> {
    return this.k.mount();
  }

  unmount(): Promise<void> {
    return this.k.unmount();
  }

  commit(note: CommitNote, strict: boolean, cells?: Int32Array): Promise<ServedCommit> {
    return this.k.commit(note, strict, cells);
  }

  async state(): Promise<ServedState> {
    return this.k.state();
  }

  changes(): Promise<FuseChanges> {
    return this.k.changes();
  }

  dispose(): void {}
}

/** One mounted Workspace as the daemon tracks it. */
export interface Entry {
  record: MountRecord;
  server: WorkspaceServer;
  /** The real path of the mount point. */
  real: string;
  committing: Promise<unknown> | null;
  /** The running commit's control cells (overlay-commit.ts): abort it, or see it progress. */
  cells: Int32Array | null;
}
