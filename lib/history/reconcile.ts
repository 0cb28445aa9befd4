/**
 * Three-way reconciliation of filesystem states: the Workspace's changes since its base are
 * replayed onto the head's tree, so the result holds both sides' work. It starts from the two
 * page-tree diffs (base → head, base → Workspace), so its cost is that of the changes, not of
 * the tree, and it edits the head's tree with a NamespaceEditor.
 *
 * Rules, path by path (paths are the Workspace's):
 * - a change on one side only is taken;
 * - a rename on one side and an edit on the other are carried across (the edit lands at the
 *   new path), and so are entries added under a directory the other side renamed;
 * - both sides changing one entry: field groups merge (reconcile-record.ts), text content
 *   merges line by line, anything else is a conflict;
 * - delete vs modify, type changes, the same path added twice with different entries, and two
 *   different renames of one entry are conflicts.
 * Nothing is resolved silently: any conflict means no root at all.
 *
 * Serials: the head's serials stay. A serial the Workspace created that the head also uses is
 * renumbered above both sides' highest serial (`renumbered` tells the caller, whose stat cache
 * or overlay must follow).
 */
import { ContentForm, InodeKind, type Inode } from '../store/tree/inode.js';
import { FsView } from '../store/tree/view.js';
import { lookup, TreeKind } from '../store/tree/pages.js';
import { NamespaceEditor } from '../store/tree/editor.js';
import { ROOT_SERIAL } from '../store/tree/root.js';
import type { ObjectWriter } from '../store/objects.js';
import type { Store } from '../store/store.js';
import { diffStates, type DiffEntry } from './diff.js';
import { mergeRecord, type ByteConflict, type ConflictKind, type LineConflict, type RecordMergeContext } from './reconcile-record.js';

export type { ByteConflict, ConflictKind, LineConflict } from './reconcile-record.js';

export interface ReconcileConflict {
  /** The Workspace's path ('/'-joined, relative to the root). */
  path: string;
  kind: ConflictKind;
  /** Where the head has the entry, when that is another path. */
  headPath?: string;
  message: string;
  /** Text conflicts: the overlapping line ranges. */
  lines?: LineConflict[];
  /** Large files merged chunk by chunk: the byte ranges of each region both sides changed. */
  ranges?: ByteConflict[];
}

export type ReconcileResult =
  | { outcome: 'Merged'; root: Buffer; merged: string[]; renumbered: Map<number, number> }
  | { outcome: 'Conflicted'; conflicts: ReconcileConflict[] };

/** One side's changes since the base, by the paths they concern. */
class SideChanges {
  /** Base path → the entry that modified, deleted or renamed away what was there. */
  readonly fate = new Map<string, DiffEntry>();
  /** Path in this side's state → the entry that put something there (added, modified, renamed). */
  readonly now = new Map<string, DiffEntry>();
  /** Directories this side renamed: old path → new path. */
  readonly dirRenames = new Map<string, string>();
  readonly entries: DiffEntry[];
  /** Paths this side added or renamed into, sorted: to find what sits under a directory. */
  readonly arrived: string[];

  constructor(store: Store, from: Buffer, to: Buffer) {
    this.entries = diffStates(store, from, to, { limit: Number.MAX_SAFE_INTEGER }).entries;
    const arrived: string[] = [];
    for (const e of this.entries) {
      if (e.change === 'modified' || e.change === 'deleted') this.fate.set(e.path, e);
      if (e.change === 'renamed') {
        this.fate.set(e.oldPath!, e);
        if (e.kind === 'dir') this.dirRenames.set(e.oldPath!, e.path);
      }
      if (e.change !== 'deleted') this.now.set(e.path, e);
      if (e.change === 'added' || e.change === 'renamed') arrived.push(e.path);
    }
    this.arrived = arrived.sort();
  }

  /** A rename that only follows its directory's rename (same name, moved with the parent). */
  implied(e: DiffEntry): boolean {
    if (e.change !== 'renamed') return false;
    const [od, on] = split(e.oldPath!);
    const [nd, nn] = split(e.path);
    return on === nn && od !== '' && this.dirRenames.get(od) === nd;
  }

  /** Where a base path is in this side's state (null: deleted). */
  pathOf(basePath: string): string | null {
    const e = this.fate.get(basePath);
    if (!e || e.change === 'modified') return basePath;
    return e.change === 'deleted' ? null : e.path;
  }

  /** Paths this side added or renamed into at or below `dir`. */
  arrivedUnder(dir: string): string[] {
    const prefix = `${dir}/`;
    let lo = 0;
    let hi = this.arrived.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.arrived[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    for (let i = lo; i < this.arrived.length && this.arrived[i]!.startsWith(prefix); i++) out.push(this.arrived[i]!);
    return out;
  }
}

function split(path: string): [string, string] {
  const i = path.lastIndexOf('/');
  return i < 0 ? ['', path] : [path.slice(0, i), path.slice(i + 1)];
}

function parts(path: string): Buffer[] {
  return path === '' ? [] : path.split('/').map((p) => Buffer.from(p, 'utf8'));
}

/** The highest serial of a state: the rightmost key of its inode table. */
export function maxSerial(store: Store, view: FsView): number {
  let page = store.pages.load(TreeKind.Inodes, view.inodesRoot);
  while (page.level > 0) page = store.pages.load(TreeKind.Inodes, page.vals[page.vals.length - 1]!);
  const last = page.keys[page.keys.length - 1];
  return last ? Number(last.readBigUInt64BE(0)) : ROOT_SERIAL;
}

function serialKey(serial: number): Buffer {
  const k = Buffer.allocUnsafe(8);
  k.writeBigUInt64BE(BigInt(serial));
  return k;
}

/**
 * The merged state of `baseRoot` → `headRoot` and `baseRoot` → `wsRoot`, written through `w`
 * (inside the caller's write transaction; on Conflicted the caller rolls back what was written).
 */
export function reconcileStates(store: Store, w: ObjectWriter, baseRoot: Buffer, headRoot: Buffer, wsRoot: Buffer, opts: ReconcileOptions = {}): ReconcileResult {
  return new Reconciler(store, w, baseRoot, headRoot, wsRoot, opts.resolved ?? new Set()).run();
}

export interface ReconcileOptions {
  /** Workspace paths whose conflict was resolved: the Workspace's version wins there. */
  resolved?: Set<string>;
}

class Reconciler {
  private readonly head: SideChanges;
  private readonly ws: SideChanges;
  private readonly views: RecordMergeContext;
  private readonly editor: NamespaceEditor;
  private readonly conflicts: ReconcileConflict[] = [];
  private readonly merged = new Set<string>();
  /** Records as edited so far (null: deleted). */
  private readonly records = new Map<number, Inode | null>();
  /** Name edits so far per directory serial (null: removed). */
  private readonly names = new Map<number, Map<string, number | null>>();
  /** Workspace path of a directory → its serial in the result, for directories the Workspace created or moved. */
  private readonly placedDirs = new Map<string, number>();
  /** Workspace serial → serial in the result, for inodes the Workspace created. */
  private readonly created = new Map<number, number>();
  private readonly renumbered = new Map<number, number>();
  /** Workspace renames reported as conflicts in the first pass. */
  private readonly refused = new Set<string>();
  /** Directories the result has that the head does not. */
  private readonly newDirs = new Set<number>();
  /** Workspace renames detached in the first pass: Workspace path → serial in the result. */
  private readonly detached = new Map<string, number>();
  private nextSerial: number;

  constructor(
    private readonly store: Store,
    w: ObjectWriter,
    baseRoot: Buffer,
    headRoot: Buffer,
    wsRoot: Buffer,
    private readonly resolved: Set<string>,
  ) {
    this.head = new SideChanges(store, baseRoot, headRoot);
    this.ws = new SideChanges(store, baseRoot, wsRoot);
    this.views = { base: store.view(baseRoot), head: store.view(headRoot), workspace: store.view(wsRoot), w, objects: store.objects };
    this.editor = new NamespaceEditor(this.views.head, store.pages, w);
    this.nextSerial = Math.max(maxSerial(store, this.views.head), maxSerial(store, this.views.workspace)) + 1;
  }

  run(): ReconcileResult {
    // Detach first (deletes, moved-away sources), so an entry renamed away and a new one added
    // at its old path do not collide.
    for (const e of this.ws.entries) {
      if (e.change === 'deleted') this.remove(e);
      else if (e.change === 'renamed' && !this.ws.implied(e)) this.detach(e);
    }
    for (const e of this.ws.entries) {
      if (e.change === 'added') this.add(e);
      else if (e.change === 'renamed') this.attach(e);
      else if (e.change === 'modified') this.modify(e);
    }
    if (this.conflicts.length > 0) return { outcome: 'Conflicted', conflicts: this.conflicts };
    for (const [serial, rec] of this.records) {
      if (rec === null) this.editor.deleteInode(serial);
      else this.editor.setInode(serial, rec);
    }
    return { outcome: 'Merged', root: this.editor.finish(), merged: [...this.merged].sort(), renumbered: this.renumbered };
  }

  private conflict(path: string, kind: ConflictKind, message: string, extra: Partial<ReconcileConflict> = {}): void {
    this.conflicts.push({ path, kind, message, ...extra });
  }

  // -- the result being built ------------------------------------------------------------------

  private inode(serial: number): Inode | null {
    const r = this.records.get(serial);
    if (r !== undefined) return r;
    return this.views.head.inode(serial);
  }

  private child(dir: number, name: Buffer): number | undefined {
    const edited = this.names.get(dir)?.get(name.toString('latin1'));
    if (edited !== undefined) return edited ?? undefined;
    if (this.newDirs.has(dir)) return undefined;
    return this.views.head.child(this.views.head.inode(dir), name);
  }

  private isNew(serial: number): boolean {
    return lookup(TreeKind.Inodes, this.store.pages, this.views.head.inodesRoot, serialKey(serial)) === undefined;
  }

  /** A path of the head's tree, as edited so far (undefined: not there). */
  private resolve(path: string): number | undefined {
    let s = ROOT_SERIAL;
    for (const p of parts(path)) {
      const next = this.child(s, p);
      if (next === undefined) return undefined;
      s = next;
    }
    return s;
  }

  /**
   * The serial at a path of the head's own tree. Serials are identities, so it stays right when
   * the Workspace's changes move that directory elsewhere.
   */
  private headSerial(path: string): number | undefined {
    try {
      return this.views.head.resolve(parts(path), path).serial;
    } catch {
      return undefined;
    }
  }

  private setName(dir: number, name: string, serial: number | null): void {
    const nameBytes = Buffer.from(name, 'utf8');
    let m = this.names.get(dir);
    if (!m) this.names.set(dir, (m = new Map()));
    m.set(nameBytes.toString('latin1'), serial);
    this.editor.setName(dir, nameBytes, serial);
  }

  private setParents(serial: number, rec: Inode, parents: number[]): void {
    this.records.set(serial, { ...rec, parents: [...parents].sort((a, b) => a - b) });
  }

  /** The directory of the result that a Workspace directory path stands for. */
  private dirFor(wsDir: string): number | undefined {
    if (wsDir === '') return ROOT_SERIAL;
    const placed = this.placedDirs.get(wsDir);
    if (placed !== undefined) return placed;
    // Not created or moved by the Workspace: a base directory, wherever the head has it now.
    const hp = this.head.pathOf(wsDir);
    return hp === null ? undefined : this.resolve(hp);
  }

  // -- Workspace changes -----------------------------------------------------------------------

  private remove(e: DiffEntry): void {
    const hf = this.head.fate.get(e.path);
    if (hf?.change === 'deleted') return;
    if (this.resolved.has(e.path)) return this.removeAt(hf ? this.head.pathOf(e.path) : e.path);
    if (hf?.change === 'modified') return this.conflict(e.path, 'delete-modify', `${e.path}: deleted in the Workspace, changed on the head`);
    if (hf?.change === 'renamed' && !this.head.implied(hf)) {
      return this.conflict(e.path, 'rename-delete', `${e.path}: deleted in the Workspace, renamed to ${hf.path} on the head`, { headPath: hf.path });
    }
    const hp = this.head.pathOf(e.path)!;
    if (e.kind === 'dir') {
      const added = this.head.arrivedUnder(hp).filter((p) => this.head.now.get(p)!.change === 'added' || !this.head.implied(this.head.now.get(p)!));
      if (added.length > 0) return this.conflict(e.path, 'delete-modify', `${e.path}: deleted in the Workspace, the head added ${added[0]} in it`, { headPath: hp });
    }
    this.removeAt(hp);
  }

  /** Removes the head's entry at `hp` (one name of it; the inode when it was the last). */
  private removeAt(hp: string | null): void {
    if (hp === null) return;
    const [dir, name] = split(hp);
    const parent = this.headSerial(dir);
    const serial = this.views.head.resolve(parts(hp), hp).serial;
    const rec = this.inode(serial);
    if (rec === null) return;
    if (parent !== undefined && this.child(parent, Buffer.from(name, 'utf8')) === serial) this.setName(parent, name, null);
    const parents = [...(rec.parents ?? [])];
    const i = parent === undefined ? -1 : parents.indexOf(parent);
    if (i >= 0) parents.splice(i, 1);
    if (parents.length === 0 || i < 0) this.records.set(serial, null);
    else this.setParents(serial, rec, parents);
  }

  private detach(e: DiffEntry): void {
    const old = e.oldPath!;
    const hf = this.head.fate.get(old);
    if (hf?.change === 'deleted') return this.conflict(e.path, 'rename-delete', `${e.path}: renamed from ${old} in the Workspace, deleted on the head`);
    if (hf?.change === 'renamed' && !this.head.implied(hf)) {
      if (hf.path === e.path) return; // the same rename on both sides
      return this.conflict(e.path, 'rename-rename', `${old}: renamed to ${e.path} in the Workspace and to ${hf.path} on the head`, { headPath: hf.path });
    }
    if (hf?.change === 'modified' && e.fields.includes('content') && !this.resolved.has(old)) {
      // Renamed and rewritten here, changed there: no content carries across (a new file that
      // took a deleted one's inode looks the same), so it is the delete-vs-modify it may be.
      this.refused.add(e.path);
      return this.conflict(old, 'delete-modify', `${old}: renamed to ${e.path} and rewritten in the Workspace, changed on the head`, { headPath: old });
    }
    const hp = this.head.pathOf(old)!;
    const serial = this.views.head.resolve(parts(hp), hp).serial;
    const [dir, name] = split(hp);
    const parent = this.headSerial(dir);
    const rec = this.inode(serial);
    if (parent === undefined || rec === null) return this.conflict(e.path, 'rename-delete', `${e.path}: renamed from ${old} in the Workspace, gone on the head`);
    this.setName(parent, name, null);
    const parents = [...(rec.parents ?? [])];
    const i = parents.indexOf(parent);
    if (i >= 0) parents.splice(i, 1);
    this.setParents(serial, rec, parents);
    this.detached.set(e.path, serial);
    if (hp !== old) this.merged.add(e.path);
  }

  private attach(e: DiffEntry): void {
    const old = e.oldPath!;
    // Refused as a delete-vs-modify (detach): the Workspace's file here is a new one, which may
    // also meet another entry the head put here; both conflicts are reported.
    if (this.refused.has(e.path)) return this.add(e);
    let serial = this.detached.get(e.path);
    if (serial === undefined) {
      // Moved with its directory, or renamed identically on both sides: it is where the head has it.
      const hf = this.head.fate.get(old);
      if (hf?.change === 'deleted') {
        if (this.ws.implied(e)) this.conflict(e.path, 'rename-delete', `${e.path}: moved with its directory in the Workspace, deleted on the head`);
        return;
      }
      if (hf?.change === 'renamed' && !this.head.implied(hf) && hf.path !== e.path) return; // conflict reported by detach
      const hp = this.head.pathOf(old)!;
      serial = this.views.head.resolve(parts(hp), hp).serial;
    } else {
      const [dir, name] = split(e.path);
      const parent = this.dirFor(dir);
      if (parent === undefined) return this.conflict(e.path, 'modify-delete', `${e.path}: renamed into ${dir} in the Workspace, which the head deleted`);
      const there = this.child(parent, Buffer.from(name, 'utf8'));
      if (there !== undefined && there !== serial) return this.conflict(e.path, 'both-added', `${e.path}: the Workspace renamed ${old} here, the head put another entry here`);
      this.setName(parent, name, serial);
      const rec = this.inode(serial)!;
      this.setParents(serial, rec, [...(rec.parents ?? []), parent]);
    }
    if (e.kind === 'dir') this.placedDirs.set(e.path, serial);
    if (this.head.fate.get(old)?.change === 'modified' && !this.ws.implied(e)) this.merged.add(e.path);
    if (e.fields.length > 0) this.mergeAt(e.path, old, serial);
  }

  private modify(e: DiffEntry): void {
    const hp = this.head.pathOf(e.path);
    if (hp === null) return this.conflict(e.path, 'modify-delete', `${e.path}: changed in the Workspace, deleted on the head`);
    const serial = this.resolve(hp);
    if (serial === undefined) return this.conflict(e.path, 'modify-delete', `${e.path}: changed in the Workspace, gone on the head`);
    if (e.kind === 'dir') this.placedDirs.set(e.path, serial);
    if (hp !== e.path) this.merged.add(e.path);
    this.mergeAt(e.path, e.path, serial);
  }

  /** Merges the fields of the entry at base path `basePath` (Workspace path `path`) into `serial`. */
  private mergeAt(path: string, basePath: string, serial: number): void {
    const b = this.views.base.resolve(parts(basePath), basePath).inode;
    const h = this.inode(serial)!;
    const wsEntry = this.views.workspace.resolve(parts(path), path).inode;
    const m = mergeRecord(this.views, b, h, wsEntry, path);
    if (!m.ok && this.resolved.has(path) && wsEntry.kind === h.kind) {
      this.records.set(serial, wsEntry.kind === InodeKind.Dir ? { ...wsEntry, parents: h.parents, form: h.form, content: h.content } : { ...wsEntry, parents: h.parents });
      this.merged.add(path);
      return;
    }
    if (!m.ok) return this.conflict(path, m.kind, m.message, { ...(m.lines ? { lines: m.lines } : {}), ...(m.ranges ? { ranges: m.ranges } : {}) });
    this.records.set(serial, m.inode);
    if (m.combined) this.merged.add(path);
  }

  private add(e: DiffEntry): void {
    const [dir, name] = split(e.path);
    const parent = this.dirFor(dir);
    if (parent === undefined) return this.conflict(e.path, 'modify-delete', `${e.path}: added in the Workspace in ${dir || '/'}, which the head deleted`);
    const wsInode = this.views.workspace.resolve(parts(e.path), e.path).inode;
    const there = this.child(parent, Buffer.from(name, 'utf8'));
    if (there !== undefined) {
      const h = this.inode(there)!;
      if (h.kind === InodeKind.Dir && wsInode.kind === InodeKind.Dir) {
        this.placedDirs.set(e.path, there);
        return;
      }
      const same = h.kind === wsInode.kind && h.size === wsInode.size && (h.content?.equals(wsInode.content ?? Buffer.alloc(0)) ?? !wsInode.content) && (h.target?.equals(wsInode.target ?? Buffer.alloc(0)) ?? !wsInode.target);
      if (same) return;
      if (this.resolved.has(e.path) && h.kind === wsInode.kind) this.records.set(there, { ...wsInode, parents: h.parents });
      else this.conflict(e.path, 'both-added', `${e.path}: added on both sides with different content`);
      return;
    }
    let serial = this.created.get(e.serial);
    if (serial !== undefined) {
      // Another name of an inode created above (a hard link).
      const rec = this.inode(serial)!;
      this.setParents(serial, rec, [...(rec.parents ?? []), parent]);
    } else {
      serial = e.serial;
      if (!this.isNew(serial) || this.records.has(serial)) {
        serial = this.nextSerial++;
        this.renumbered.set(e.serial, serial);
      }
      this.created.set(e.serial, serial);
      const rec: Inode = { ...wsInode, parents: [parent] };
      if (rec.kind === InodeKind.Dir) {
        rec.form = ContentForm.None;
        rec.content = null;
        this.newDirs.add(serial);
      }
      this.records.set(serial, rec);
    }
    this.setName(parent, name, serial);
    if (e.kind === 'dir') this.placedDirs.set(e.path, serial);
  }
}
