/**
 * How the daemon serves one mounted Workspace: the overlay on the daemon's own thread
 * (fuse-native) or in the kernel backend's serving thread. The daemon keeps one Entry per mount.
 */
import type { CommitNote } from '../history/index.js';
import type { Store } from '../store/index.js';
import type { FuseMount } from './fuse.js';
import type { KernelMount } from './kernel.js';
import type { Overlay } from './overlay.js';
import { wireChanges, wireOutcome, type ServedCommit, type ServedState } from './outcome.js';
import type { FuseChanges, MountRecord } from './protocol.js';

/** One served Workspace, whatever the backend. */
export interface WorkspaceServer {
  mount(): Promise<void>;
  unmount(): Promise<void>;
  /** `cells`: shared control cells (overlay-commit.ts) through which the daemon aborts the commit or watches it progress. */
  commit(note: CommitNote, strict: boolean, cells?: Int32Array): Promise<ServedCommit>;
  state(): Promise<ServedState>;
  changes(): Promise<FuseChanges>;
  dispose(): void;
}

/** fuse-native: the overlay lives on this thread, beside libfuse's callbacks. */
export class InProcessServer implements WorkspaceServer {
  constructor(
    private readonly store: Store,
    private readonly overlay: Overlay,
    private readonly fuse: FuseMount,
  ) {}

  mount(): Promise<void> {
    return this.fuse.mount();
  }

  unmount(): Promise<void> {
    return this.fuse.unmount();
  }

  // fuse-native: the commit runs on the daemon's own thread, so nothing can abort or watch it meanwhile.
  async commit(note: CommitNote, strict: boolean): Promise<ServedCommit> {
    const a0 = this.store.meter.allocatedGrowth;
    const out = await this.overlay.commit(note, strict);
    return { outcome: wireOutcome(out, this.store.meter.allocatedGrowth - a0), changed: this.overlay.changed };
  }

  async state(): Promise<ServedState> {
    return { changed: this.overlay.changed, pending: this.overlay.pending(), openHandles: this.overlay.openHandles, committing: this.overlay.busy };
  }

  async changes(): Promise<FuseChanges> {
    return wireChanges(this.overlay.changes());
  }

  dispose(): void {
    this.overlay.dispose();
  }
}

/** The kernel backend: the overlay lives in the mount's serving thread (kernel-worker.ts). */
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
