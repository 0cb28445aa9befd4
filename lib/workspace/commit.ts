/**
 * Committing a materialized Workspace: the walk against its stat cache, the changed files read
 * and stored (record.ts), the trees edited, and the Commit published on its Branch (publish.ts).
 * A small commit is recorded before the Store's write lock is taken (Store.writeStaged), so
 * that the Workspaces of one Store hold the lock only to publish.
 */
import { toHex } from '../format/hex.js';
import { branchRoot, EMPTY_NOTE, getBranch, type CommitNote, type CommitRow, type ReconcileConflict } from '../history/index.js';
import { NamespaceEditor, type ObjectWriter, type Store, type WriteStats } from '../store/index.js';
import { cachePlan, loadCache, writeCache, type CachePlan, type StatCache } from './cache.js';
import { computeChanges, type ChangeSet } from './changes.js';
import { runningExecutions } from './exec.js';
import { isSmudged, smudgeRacy } from './racy.js';
import { readBasesAhead, recordChanges, startReading, type ChangeReading, type RecordClock } from './record.js';
import { checkUnchanged, publishWorkspaceCommit, refused } from './publish.js';
import { syncProjection } from './sync.js';
import { setWorkspaceBase, type WorkspaceRow } from './rows.js';

/** A reconciling commit's report: paths that combine both sides, retries, time (ms). */
export interface ReconcileReport {
  merged: string[];
  retries: number;
  ms: number;
}

export type CommitOutcome =
  | { outcome: 'Created'; commit: CommitRow; previousHead: Buffer | null; changedPaths: number; write: WriteStats; reconciled?: ReconcileReport }
  | { outcome: 'UpToDate'; head: Buffer | null }
  | { outcome: 'Busy'; executions: string[] }
  | { outcome: 'HeadMoved'; expected: Buffer | null; actual: Buffer | null }
  | { outcome: 'Conflicted'; conflicts: ReconcileConflict[]; head: Buffer | null; ms: number };

/**
 * `note`: the Commit's message, metadata and author; `strict`: HeadMoved instead of reconciling;
 * `exclude`: gitignore patterns whose new paths this commit leaves out (after `.layerfsignore`'s).
 */
export interface CommitRun {
  note?: CommitNote;
  strict?: boolean;
  exclude?: readonly string[];
}

/**
 * Wall time (ms) of a commit by phase: walkRead = stat cache load and the walk compared with it;
 * chunkHash = waiting for the addon to read, chunk and hash changed files; write = storing
 * objects and editing the trees. The caller counts the rest as publish (Commit row, stat cache
 * save, COMMIT).
 */
export interface CommitPhases {
  walkRead: number;
  chunkHash: number;
  write: number;
}

export async function commitWorkspace(
  store: Store,
  ws: WorkspaceRow,
  stateDir: string,
  phases: CommitPhases = { walkRead: 0, chunkHash: 0, write: 0 },
  run: CommitRun = {},
): Promise<CommitOutcome> {
  // A stale staged commit (Store.writeStaged) wrote nothing: it is made again, under the lock.
  return (await commitOnce(store, ws, stateDir, phases, run, true)) ?? (await commitOnce(store, ws, stateDir, phases, run, false))!;
}

/** What one try of a commit works on, from its walk to its publication. */
interface CommitTry {
  store: Store;
  ws: WorkspaceRow;
  run: CommitRun;
  phases: CommitPhases;
  cache: StatCache;
  cs: ChangeSet;
  reading: ChangeReading;
  plan: CachePlan;
  clock: RecordClock;
  oldSerialAt: (index: number) => number;
  /** Wall time the reads began (racy.ts). */
  readFromMs: number;
  /** Time spent before the write, counted in phases.chunkHash. */
  readMs: number;
}

/** What a commit recorded: the new root and the serials recorded as they were (recordChanges). */
interface Recorded {
  root: Buffer;
  same: Set<number>;
}

/** One try of commitWorkspace; undefined when `stage` was allowed and the staged write went stale. */
async function commitOnce(store: Store, ws: WorkspaceRow, stateDir: string, phases: CommitPhases, run: CommitRun, stage: boolean): Promise<CommitOutcome | undefined> {
  const running = runningExecutions(stateDir, toHex(ws.id));
  if (running.length > 0) return { outcome: 'Busy', executions: running.map((e) => e.id) };
  let t = performance.now();
  const cache = loadCache(store, ws.id);
  const cs = await computeChanges(ws.path, cache, run.exclude ?? []);
  phases.walkRead = performance.now() - t;
  if (cs.clean) {
    const u = checkUnchanged(store, { branchId: ws.branchId, expectedHead: ws.expectedHeadId, expectedBase: ws.expectedBaseId }, run.strict ?? false);
    if (u.outcome === 'HeadMoved') return u;
    // Nothing to publish, but the head moved: the Workspace moves onto it, as after any commit.
    if (u.moveTo) await store.write(() => moveOnto(store, ws, cache));
    return { outcome: 'UpToDate', head: u.head };
  }
  // The first reads happen before the write lock is taken (record.ts), at once: entries read
  // within their ctime's timestamp tick are marked racy in the new stat cache (racy.ts).
  t = performance.now();
  const oldSerialAt = (i: number): number => {
    const j = cs.oldIndex[i]!;
    return j >= 0 ? cache.serial[j]! : 0;
  };
  const readFromMs = Date.now();
  const reading = startReading(cs);
  // The new stat cache is encoded and compressed, and a small commit's delta bases are read,
  // before the lock, while the addon reads the first files.
  const plan = cachePlan(smudgeRacy(cs.now, cs.changed, readFromMs), { old: cache, oldIndex: cs.oldIndex, changed: cs.changed });
  readBasesAhead(store, cs, ws.baseRootId, oldSerialAt);
  const c: CommitTry = { store, ws, run, phases, cache, cs, reading, plan, clock: { waitMs: 0 }, oldSerialAt, readFromMs, readMs: performance.now() - t };
  try {
    // A small commit (at most BASES_AHEAD_LIMIT changed paths) is recorded before the lock:
    // only writing its rows and publishing happen under it.
    if (stage && reading.keep) {
      const out = await store.writeStaged((w) => record(c, w), (w, r) => publish(c, w, r));
      if (!out) await reading.scans.settle();
      return out?.value;
    }
    return await store.write(async (w) => publish(c, w, await record(c, w)));
  } catch (e) {
    // Reads still in flight (the transaction failed before storing them) settle first.
    await reading.scans.settle();
    // Nothing was published; what overlapped is kept for `workspace conflicts` and `resolve`.
    return refused(store, ws.id, e);
  }
}

/** Stores the changed files and edits the trees: the new root. */
async function record(c: CommitTry, w: ObjectWriter): Promise<Recorded> {
  const { store, cs } = c;
  const t = performance.now();
  const base = store.view(c.ws.baseRootId);
  const editor = new NamespaceEditor(base, store.pages, w);
  const same = await recordChanges(c.reading, base, editor, w, c.clock, c.oldSerialAt);
  // Every changed serial's record is in the editor now: its list (a few hundred bytes of
  // heap per changed path) goes before the trees are written, the commit's largest step.
  cs.changedSerials.clear();
  for (const s of cs.deletedSerials) editor.deleteInode(s);
  // The editor shares each name's key; the change set's maps go now.
  for (const [dir, m] of cs.names) for (const [key, serial] of m) editor.setNameKey(dir, key, serial);
  cs.names.clear();
  // Writing the trees probes the object index a few hundred times (delta chains, stored pages):
  // one read snapshot for all of them instead of one per probe when staged, outside the write
  // lock. It ends with the call, so it never holds the WAL across the stage's waits
  // (DECISIONS.md, "A staged commit writes its trees in one read snapshot").
  const root = store.read(() => editor.finish());
  // chunkHash: the reads before the transaction, and the waits inside it.
  c.phases.chunkHash = c.readMs + c.clock.waitMs;
  c.phases.write = performance.now() - t - c.clock.waitMs;
  return { root, same };
}

/** Publishes the recorded root on the Branch and saves the stat cache, under the write lock. */
function publish(c: CommitTry, w: ObjectWriter, { root, same }: Recorded): CommitOutcome {
  const { store, ws, cs, cache } = c;
  const target = { branchId: ws.branchId, expectedHead: ws.expectedHeadId, expectedBase: ws.expectedBaseId, baseRoot: ws.baseRootId, workspaceId: ws.id };
  const { published, head } = publishWorkspaceCommit(store, w, target, root, { note: c.run.note ?? EMPTY_NOTE, strict: c.run.strict ?? false });
  const rec = published.reconciliation;
  // The Workspace shows what was published: the other side's changes are written in.
  if (rec) syncProjection(store, ws.id, ws.path, root, published.root, cache, c.readFromMs);
  else writeCache(store, ws.id, c.plan);
  if (published.outcome === 'UpToDate') return { outcome: 'UpToDate', head };
  // A racy entry read again that records what it did is not a changed path.
  let changedPaths = cs.deletedPaths.length;
  for (let i = 0; i < cs.now.count; i++) {
    const j = cs.oldIndex[i]!;
    if (cs.changed[i] && !(j >= 0 && isSmudged(cache, j) && cache.serial[j] === cs.now.serial[i] && same.has(cs.now.serial[i]!))) changedPaths++;
  }
  const out: CommitOutcome = { outcome: 'Created', commit: published.commit, previousHead: published.previousHead, changedPaths, write: { ...w.stats } };
  if (rec) out.reconciled = { merged: rec.merged, retries: rec.retries, ms: rec.ms };
  return out;
}

/** Writes the head's changes into a clean Workspace and makes the head its base (the base Layer unchanged). */
function moveOnto(store: Store, ws: WorkspaceRow, cache: StatCache): void {
  const now = getBranch(store, ws.branchId)!;
  const root = branchRoot(store, now);
  if (!now.baseLayerId.equals(ws.expectedBaseId)) return;
  syncProjection(store, ws.id, ws.path, ws.baseRootId, root, cache);
  setWorkspaceBase(store, ws.id, root, now.headCommitId);
}
