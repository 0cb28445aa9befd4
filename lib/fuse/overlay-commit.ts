/**
 * The overlay's commit: `commit()` writes only what changed — changed records, names per
 * directory, deleted serials — through NamespaceEditor, hands the new root to the one publish
 * path of Workspaces (lib/workspace/publish.ts: compare-and-swap of the Branch head and the
 * Workspace row), and on success rebases the overlay onto the published state. While a commit
 * runs, mutating operations submitted through `run()` wait in a queue and run, in order, once
 * the commit is over: every Commit is a consistent cut.
 */
import { LayerFsError } from '../errors.js';
import { EMPTY_NOTE, type CommitNote, type CommitRow, type ReconcileConflict, type Reconciliation } from '../history/index.js';
import { checkUnchanged, publishWorkspaceCommit, refused, setWorkspaceBase, type Published } from '../workspace/index.js';
import { ContentForm, InodeKind, NamespaceEditor, ROOT_SERIAL, type Inode, type ObjectWriter, type WriteStats } from '../store/index.js';
import type { ContentBuild } from './content.js';
import { storeSpooled, storeSpooledSync, type SpooledFiles } from './commit-content.js';
import { StoredContents } from './stored-contents.js';
import { parentsOf, type Node } from './overlay-node.js';
import type { CommitTarget } from './overlay-nodes.js';
import { OverlayPrestore } from './overlay-prestore.js';

/** A reconciling commit's report: paths combining both sides, compare-and-swap retries, time (ms). */
export interface OverlayReconciled {
  merged: string[];
  retries: number;
  ms: number;
}

export type OverlayCommitOutcome =
  | { outcome: 'Created'; commit: CommitRow; rootId: Buffer; previousHead: Buffer | null; write: WriteStats; build: CommitBuild; ms: number; reconciled?: OverlayReconciled }
  | { outcome: 'UpToDate'; head: Buffer | null; rootId: Buffer; ms: number }
  | { outcome: 'HeadMoved'; expected: Buffer | null; actual: Buffer | null; ms: number }
  | { outcome: 'Conflicted'; conflicts: ReconcileConflict[]; head: Buffer | null; ms: number };

/** What a commit read and wrote: records, deletions, names, and files whose content was stored ahead (overlay-prestore.ts). */
export type CommitBuild = ContentBuild & { records: number; deleted: number; names: number; prestored: number };

/**
 * Shared with whoever waits for a commit running on another thread (the daemon, for a serving
 * thread's commit): cell ABORT set asks the commit to stop at its next record (it stores nothing
 * then: the transaction rolls back and the overlay keeps every change); cell DONE counts the
 * records, deletions and directories written so far, so the waiter can tell a long commit that
 * progresses from one that is stuck.
 */
export enum CommitCell {
  Abort = 0,
  Done = 1,
}

/** A commit's control cells (CommitCell), in memory shared between threads. */
export function commitCells(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
}

/** One more step of a commit done; throws ERR_ABORTED (rolling the transaction back) when an abort was asked. */
function step(cells: Int32Array | undefined): void {
  if (!cells) return;
  Atomics.add(cells, CommitCell.Done, 1);
  if (Atomics.load(cells, CommitCell.Abort) !== 0) {
    throw new LayerFsError('ERR_ABORTED', 'the commit was aborted (the mount daemon is stopping); nothing was stored and the Workspace keeps its changes', { hint: 'commit again once the daemon runs' });
  }
}

/** How often, at most, a commit's steps hand the thread to `between` (ms). */
export const BETWEEN_STEPS_MS = 5;

/**
 * A commit's step function: counts and honours an abort (`step`), and every BETWEEN_STEPS_MS at
 * most runs `between`, which may answer requests that read the overlay (never one that changes
 * it: the commit is a consistent cut of the state it started from).
 */
function stepper(cells: Int32Array | undefined, between: (() => void) | undefined): Tick {
  if (!between) return Object.assign(() => step(cells), { pause: () => {} });
  let last = performance.now();
  const pause = () => {
    const now = performance.now();
    if (now - last < BETWEEN_STEPS_MS) return;
    between();
    last = performance.now();
  };
  return Object.assign(
    () => {
      step(cells);
      pause();
    },
    { pause },
  );
}

/** A commit's step (counts, honours an abort, may pause); `pause` alone inside a long step (a large file's chunks): never throws. */
type Tick = (() => void) & { pause: () => void };

interface CommitWrite {
  published: Published;
  root: Buffer;
  head: Buffer | null;
  write: WriteStats;
  reconciliation?: Reconciliation;
}

export class Overlay extends OverlayPrestore {
  // -------------------------------------------------------------------------------------------
  // Commit

  protected record(n: Node, w: ObjectWriter, build: ContentBuild, contents: StoredContents, pause?: () => void): Inode {
    const rec: Inode = {
      kind: n.kind,
      mode: n.mode,
      uid: n.uid,
      gid: n.gid,
      mtimeNs: n.mtimeNs,
      size: 0,
      nlink: 1,
      parents: [...n.parents].sort((a, b) => a - b),
      form: ContentForm.None,
      content: null,
      xattrs: n.xattrs.map((x) => ({ name: x.name, value: x.value })),
    };
    switch (n.kind) {
      case InodeKind.File: {
        // A view: the record is encoded before the table changes, and the table outlives the commit's writes.
        let c = contents.view(n.serial);
        if (!c) {
          c = n.data!.store(w, build, n.inBase ? undefined : this.predecessor(n.serial), pause);
          contents.set(n.serial, c);
        }
        rec.size = c.size;
        rec.form = c.form;
        rec.content = c.id;
        break;
      }
      case InodeKind.Dir:
        // The editor applies this directory's name changes to its base tree.
        if (n.inBase) {
          const old = this.view.inode(n.serial);
          rec.form = old.form;
          rec.content = old.content;
        }
        break;
      case InodeKind.Symlink:
        rec.target = n.target!;
        rec.size = n.target!.length;
        break;
      case InodeKind.CharDev:
      case InodeKind.BlockDev:
        rec.rdev = n.rdev ?? 0;
        break;
      default:
        break;
    }
    return rec;
  }

  /**
   * Stores what changed and publishes it as the next Commit of the target Branch, synchronously:
   * nothing else runs on this thread meanwhile, so the Commit is a consistent cut. When the
   * head moved, the changes are reconciled with it (unless `strict`: HeadMoved) and the overlay
   * moves onto the merged state. HeadMoved and Conflicted store nothing and leave the overlay as
   * it was.
   */
  commitSync(note: CommitNote = EMPTY_NOTE, strict = false, cells?: Int32Array, between?: () => void): OverlayCommitOutcome {
    return this.commitWith((fn) => this.store.writeSync(fn), note, strict, stepper(cells, between));
  }

  /**
   * commitSync for callers that may wait: every changed file held whole in a spool file, large
   * ones too, goes through import's pipeline (commit-content.ts storeSpooled); the stored state
   * is the same as commitSync's. Mutations submitted through run() meanwhile wait. The kernel
   * backend's serving thread uses commitSync, which reads such files ahead on the addon's threads
   * and waits for them where it is (storeSpooledSync): a serving loop that
   * awaited the commit measured slower (docs/BENCHMARKS.md, "FUSE commit: the pipelined content path").
   */
  async commit(note: CommitNote = EMPTY_NOTE, strict = false, cells?: Int32Array): Promise<OverlayCommitOutcome> {
    return this.commitWith((fn) => this.store.write(fn), note, strict, stepper(cells, undefined), true);
  }

  protected commitWith<R extends OverlayCommitOutcome | Promise<OverlayCommitOutcome>>(
    write: (fn: (w: ObjectWriter) => CommitWrite | Promise<CommitWrite>) => CommitWrite | Promise<CommitWrite>,
    note: CommitNote,
    strict: boolean,
    tick: Tick,
    ahead = false,
  ): R {
    if (this.committing) throw new LayerFsError('ERR_BUSY', 'a commit of this Workspace is already running');
    const t0 = performance.now();
    const target = this.target;
    if (!this.changed) {
      const u = checkUnchanged(this.store, target, strict);
      if (u.outcome === 'HeadMoved') return { ...u, ms: performance.now() - t0 } as R;
      // Nothing to publish, but the head moved: the overlay moves onto it, as after any commit.
      if (u.moveTo) this.moveOnto(u.moveTo.head, u.moveTo.root);
      return { outcome: 'UpToDate', head: u.head, rootId: this.rootId, ms: performance.now() - t0 } as R;
    }
    this.checkSpools();
    this.committing = true;
    const contents = new StoredContents();
    const build: CommitBuild = { bytesRead: 0, chunksHashed: 0, records: 0, deleted: 0, names: 0, prestored: 0 };
    const finish = (result: CommitWrite): OverlayCommitOutcome => {
      this.rebase(result.root, contents);
      if (result.reconciliation) this.moved(result.reconciliation.renumbered);
      this.target = { ...target, expectedHead: result.head };
      const ms = performance.now() - t0;
      if (result.published.outcome === 'UpToDate') return { outcome: 'UpToDate', head: result.head, rootId: result.root, ms };
      const rec = result.reconciliation;
      const out: OverlayCommitOutcome = { outcome: 'Created', commit: result.published.commit, rootId: result.root, previousHead: result.published.previousHead, write: result.write, build, ms };
      if (rec) out.reconciled = { merged: rec.merged, retries: rec.retries, ms: rec.ms };
      return out;
    };
    // Nothing was stored; the overlay keeps every change (a Conflicted one's conflicts are kept for `workspace conflicts`).
    const fail = (e: unknown): OverlayCommitOutcome => ({ ...refused(this.store, target.workspaceId ?? null, e), ms: performance.now() - t0 });
    const done = () => {
      this.committing = false;
      this.drain();
    };
    let r: CommitWrite | Promise<CommitWrite>;
    try {
      r = write((w) => {
        if (ahead) return this.storeAhead(w, build, contents, tick).then(() => this.writeCommit(w, target, build, contents, note, strict, tick));
        this.storeAheadSync(w, build, contents, tick);
        return this.writeCommit(w, target, build, contents, note, strict, tick);
      });
    } catch (e) {
      done();
      return fail(e) as R;
    }
    if (r instanceof Promise) {
      return r.then(finish, fail).finally(done) as R;
    }
    try {
      return finish(r) as R;
    } finally {
      done();
    }
  }

  /**
   * Changed files held whole in a spool file, in serial order, but for those whose content was
   * stored ahead and still holds (overlay-prestore.ts): those go straight into `contents`.
   */
  private spooledFiles(contents: StoredContents, build: CommitBuild): SpooledFiles {
    const serials: number[] = [];
    const sizes: number[] = [];
    const epoch = this.prestored.size > 0 ? this.store.gcEpoch() : -1;
    for (const serial of [...this.dirtyRecords].sort((a, b) => a - b)) {
      const n = this.nodes.get(serial);
      if (!n || n.kind !== InodeKind.File || n.socket || !this.alive(n)) continue;
      const ahead = this.prestoredFor(n, epoch);
      if (ahead) {
        contents.set(serial, ahead);
        build.prestored++;
        continue;
      }
      if (n.data!.spooledWhole === null) continue;
      serials.push(serial);
      sizes.push(n.data!.size);
    }
    // Mutations wait for the commit: every node stays as it is until the files are stored (a
    // path that is no longer there reads as no file, and the record's own path stores it).
    const data = (i: number) => this.nodes.get(serials[i]!)!;
    return {
      count: serials.length,
      serial: (i) => serials[i]!,
      size: (i) => sizes[i]!,
      path: (i) => data(i).data!.spooledWhole ?? '',
      predecessor: (i) => this.versionOf(data(i)),
    };
  }

  /** Stores, through import's pipeline, the content of every changed file held whole in a spool file (into `contents`). */
  protected async storeAhead(w: ObjectWriter, build: CommitBuild, contents: StoredContents, tick: Tick): Promise<void> {
    await storeSpooled(this.spooledFiles(contents, build), w, build, contents, tick);
  }

  /**
   * storeAhead for commitSync: the files are opened, read, chunked and hashed on the addon's
   * threads a few batches (a large file: a few pieces) ahead while this thread stores, pausing
   * between a large file's pieces as the overlay's own path does between its chunks.
   */
  protected storeAheadSync(w: ObjectWriter, build: CommitBuild, contents: StoredContents, tick: Tick): void {
    storeSpooledSync(this.spooledFiles(contents, build), w, build, contents, tick, tick.pause);
  }

  /** Inside the write transaction: records, deletions, names, the root, then the compare-and-swap. */
  protected writeCommit(w: ObjectWriter, target: CommitTarget, build: CommitBuild, contents: StoredContents, note: CommitNote, strict: boolean, tick: Tick): CommitWrite {
    const store = this.store;
    const editor = new NamespaceEditor(this.view, store.pages, w);
    for (const serial of [...this.dirtyRecords].sort((a, b) => a - b)) {
      const n = this.nodes.get(serial);
      if (!n || !this.alive(n) || n.socket) continue;
      // A new serial has no old version under it to offer as a delta base (a file it replaced is
      // offered through `replaced`), so the editor is not asked to look for one: a miss costs a
      // thrown error, tens of microseconds, and rsync makes every file a new serial.
      // Content stored ahead was offered its previous version already.
      const hinted = n.kind === InodeKind.File && (!n.inBase || n.data!.offersDeltaBases || contents.has(serial));
      editor.setInode(serial, this.record(n, w, build, contents, tick.pause), hinted);
      build.records++;
      tick();
    }
    for (const s of this.deleted) {
      editor.deleteInode(s);
      tick();
    }
    build.deleted = this.deleted.size;
    // In serial order, as the records: directories near in serial are near in the Store's pages.
    for (const dir of [...this.namesChanged].sort((x, y) => x - y)) {
      const d = this.nodes.get(dir);
      if (!d || !this.alive(d) || d.kind !== InodeKind.Dir) continue;
      for (const [k, serial] of this.nameEdits(d)) {
        editor.setNameKey(dir, k, serial);
        build.names++;
      }
      // Every record is set: the directory's names are written now, not all held until finish.
      editor.writeNames(dir);
      tick();
    }
    // Each directory written is a step: a client waiting for a large commit sees it progress.
    const own = editor.finish(tick);
    tick();
    const { published, head } = publishWorkspaceCommit(store, w, { ...target, baseRoot: this.rootId, workspaceId: target.workspaceId ?? null }, own, { note, strict });
    const root = published.root;
    return { published, root, head, write: { ...w.stats }, ...(published.reconciliation ? { reconciliation: published.reconciliation } : {}) };
  }

  protected drain(): void {
    while (this.waiting.length > 0 && !this.committing) {
      const fn = this.waiting.shift()!;
      try {
        fn();
      } catch {
        /* each queued operation answers its own caller */
      }
    }
  }

  /**
   * The committed state becomes the base: spools go, records and names are clean again. Nodes
   * nothing holds open are let go (they load again from the new base on use, as after a
   * reconciling commit), so a Workspace that committed a large change keeps no per-file memory
   * for it; only their ctime and atime, which the state does not record, start again from mtime.
   */
  protected rebase(root: Buffer, contents: StoredContents): void {
    for (const serial of this.dirtyRecords) {
      const n = this.nodes.get(serial);
      if (n && this.alive(n) && !n.socket) n.inBase = true;
    }
    // A directory holding a live socket keeps its node: the state does not record the socket, so
    // a directory loaded again from it would lose the name.
    const holdsSocket = new Set<number>();
    this.nodes.forEach((n) => {
      if (n.socket && this.alive(n)) for (const d of n.parents) holdsSocket.add(d);
    });
    this.nodes.retain((n) => {
      if (!this.alive(n)) n.inBase = false;
      else if (n.inBase && n.open === 0 && n.serial !== ROOT_SERIAL && !holdsSocket.has(n.serial)) {
        n.data?.dispose();
        return false;
      }
      return true;
    });
    // Only the nodes kept take their stored content (a freed node's spool went with it).
    for (const serial of contents.serials()) {
      const data = this.nodes.get(serial)?.data;
      if (data) data.rebase(contents.get(serial)!);
    }
    this.deleted.clear();
    this.dirtyRecords.clear();
    this.replaced.clear();
    this.forgetPrestored();
    this.namesChanged.clear();
    this.view = this.store.view(root);
    this.rootId = root;
    this.changedSinceBase = false;
  }

  /**
   * After a reconciling commit the base is the merged state, which holds the head's changes too:
   * cached inodes may be stale, so closed ones are dropped (they load again from the new base on
   * use) and open ones refresh their names; an inode the merge renumbered moves to its new serial.
   */
  protected moved(renumbered: Map<number, number>): void {
    this.nodes.retain((n) => n.open !== 0);
    for (const n of this.nodes.values()) {
      const to = renumbered.get(n.serial);
      if (to !== undefined) {
        this.nodes.delete(n.serial);
        for (const h of this.handles.values()) if (h.serial === n.serial) h.serial = to;
        n.serial = to;
        this.nodes.set(to, n);
      }
      n.children = undefined;
      n.subdirs = undefined;
      try {
        n.parents = parentsOf(this.view.inode(n.serial));
      } catch {
        n.parents = [];
      }
    }
    this.nextSerial = Math.max(this.nextSerial, this.maxStoredSerial() + 1);
  }

  protected moveOnto(head: Buffer | null, root: Buffer): void {
    if (this.target.workspaceId) {
      const id = this.target.workspaceId;
      this.store.writeSync(() => setWorkspaceBase(this.store, id, root, head));
    }
    this.rebase(root, new StoredContents());
    this.moved(new Map());
    this.target = { ...this.target, expectedHead: head };
  }

  /** Drops every spool file (the overlay is going away). */
  dispose(): void {
    this.nodes.forEach((n) => n.data?.dispose());
    this.nodes.clear();
    this.handles.clear();
  }
}
