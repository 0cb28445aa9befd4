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
 *   different renames of one entry are conflicts;
 * - a rename that also rewrote the content may be a new file that took a deleted file's inode
 *   number: against the other side's change, rename elsewhere or delete of the old path it
 *   counts as a delete of the old path and an add of the new one (an edit of the old path on
 *   the other side against the head's rename with a rewrite is still merged in, or a conflict;
 *   the same rename on both sides is one entry).
 * Nothing is resolved silently: any conflict means no root at all. A path the Workspace
 * resolved (`workspace resolve`) takes the Workspace's version, whatever it is: its own, the
 * head's or its base's, present or absent; what the head has at other paths stays, except that
 * a resolved delete of a file the head renamed deletes it where the head moved it.
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
import type { DiffEntry } from './diff.js';
import { parts, SideChanges, split } from './reconcile-sides.js';
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
  /** Workspace renames with a rewrite taken as a delete and an add in the first pass (detach). */
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
    this.restoreResolved();
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
    // Deleted there, or moved away with a rewrite (maybe a new file that took its inode number).
    if (hf?.change === 'deleted' || this.rewrittenAway(hf)) return;
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
    this.unlink(parent, name, this.views.head.resolve(parts(hp), hp).serial);
  }

  /** Takes the name `name` of `serial` out of directory `parent`; the inode goes with its last name. */
  private unlink(parent: number | undefined, name: string, serial: number): void {
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
    // Rewritten here and changed, moved elsewhere or deleted there: no content carries across,
    // and it may be a new file that took a deleted one's inode number, so it is a delete of the
    // old path and an add of this one (attach). The same rename on both sides stays one entry.
    if (e.fields.includes('content') && hf && !this.head.implied(hf) && !(hf.change === 'renamed' && hf.path === e.path)) {
      this.refused.add(e.path);
      if (hf.change === 'deleted' || this.rewrittenAway(hf)) return; // deleted on both sides
      // Resolved: the old path goes (the head has it elsewhere after a rename: that stays).
      if (this.resolved.has(old)) return hf.change === 'modified' ? this.removeAt(old) : undefined;
      if (hf.change === 'modified') return this.conflict(old, 'delete-modify', `${old}: renamed to ${e.path} and rewritten in the Workspace, changed on the head`, { headPath: old });
      return this.conflict(old, 'rename-delete', `${old}: renamed to ${e.path} and rewritten in the Workspace, renamed to ${hf.path} on the head`, { headPath: hf.path });
    }
    if (hf?.change === 'deleted') return this.conflict(e.path, 'rename-delete', `${e.path}: renamed from ${old} in the Workspace, deleted on the head`);
    if (hf?.change === 'renamed' && !this.head.implied(hf)) {
      if (hf.path === e.path) return; // the same rename on both sides
      return this.conflict(e.path, 'rename-rename', `${old}: renamed to ${e.path} in the Workspace and to ${hf.path} on the head`, { headPath: hf.path });
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
    // Taken as a delete and an add (detach): the Workspace's file here is a new one, which may
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
      if (there !== undefined && there !== serial) {
        if (!this.resolved.has(e.path) || this.inode(there)?.kind === InodeKind.Dir) return this.conflict(e.path, 'both-added', `${e.path}: the Workspace renamed ${old} here, the head put another entry here`);
        this.unlink(parent, name, there);
      }
      this.setName(parent, name, serial);
      const rec = this.inode(serial)!;
      this.setParents(serial, rec, [...(rec.parents ?? []), parent]);
    }
    if (e.kind === 'dir') this.placedDirs.set(e.path, serial);
    if (this.head.fate.get(old)?.change === 'modified' && !this.ws.implied(e)) this.merged.add(e.path);
    if (e.fields.length > 0 || this.resolved.has(e.path)) this.mergeAt(e.path, old, serial);
  }

  private modify(e: DiffEntry): void {
    const hp = this.head.pathOf(e.path);
    // Resolved: the Workspace's version comes back where the head deleted it or moved a rewrite away.
    if (this.resolved.has(e.path) && (hp === null || this.rewrittenAway(this.head.fate.get(e.path)))) return this.add(e);
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
    // Resolved: exactly the Workspace's version, not a merge with what the head did since.
    if (this.resolved.has(path) && wsEntry.kind === h.kind) {
      this.records.set(serial, wsEntry.kind === InodeKind.Dir ? { ...wsEntry, parents: h.parents, form: h.form, content: h.content } : { ...wsEntry, parents: h.parents });
      this.merged.add(path);
      return;
    }
    const m = mergeRecord(this.views, b, h, wsEntry, path);
    if (!m.ok) return this.conflict(path, m.kind, m.message, { ...(m.lines ? { lines: m.lines } : {}), ...(m.ranges ? { ranges: m.ranges } : {}) });
    this.records.set(serial, m.inode);
    if (m.combined) this.merged.add(path);
  }

  /**
   * Resolved paths the Workspace has as in its base (`resolve --layer`, or `--branch` where the
   * head deleted what the Workspace changed): the next commit takes the Workspace's version
   * there too, so the head's change to that path is undone.
   */
  private restoreResolved(): void {
    const touched = new Set<string>();
    for (const e of this.ws.entries) {
      touched.add(e.path);
      if (e.oldPath) touched.add(e.oldPath);
    }
    for (const path of this.resolved) {
      if (touched.has(path)) continue;
      const hf = this.head.fate.get(path);
      if (hf?.change === 'modified' && hf.kind !== 'dir') {
        const serial = this.resolve(path);
        const b = this.views.base.resolve(parts(path), path).inode;
        const h = serial === undefined ? null : this.inode(serial);
        if (serial !== undefined && h !== null && h.kind === b.kind) {
          this.records.set(serial, { ...b, parents: h.parents });
          this.merged.add(path);
        }
      } else if (hf && (hf.change === 'deleted' || this.rewrittenAway(hf)) && hf.kind !== 'dir') this.restoreDeleted(path);
      // Not in the base: the head added it or moved something here.
      else if (!hf && this.head.now.has(path)) this.removeAt(path);
    }
  }

  /**
   * A head rename that also rewrote the content: maybe a new file that took the old one's inode
   * number. A resolved path is then the path alone: what the head has elsewhere stays.
   */
  private rewrittenAway(hf: DiffEntry | undefined): boolean {
    return hf?.change === 'renamed' && !this.head.implied(hf) && hf.fields.includes('content');
  }

  /** Puts the base's entry at `path` back, where the head deleted it (a new serial if its own is taken). */
  private restoreDeleted(path: string): void {
    const [dir, name] = split(path);
    const parent = this.dirFor(dir);
    if (parent === undefined) return this.conflict(path, 'modify-delete', `${path}: resolved, but the head deleted ${dir}`);
    if (this.child(parent, Buffer.from(name, 'utf8')) !== undefined) return this.conflict(path, 'both-added', `${path}: resolved, but the head put another entry here`);
    const { serial: baseSerial, inode: b } = this.views.base.resolve(parts(path), path);
    let serial = baseSerial;
    if (!this.isNew(serial) || this.records.has(serial)) {
      serial = this.nextSerial++;
      this.renumbered.set(baseSerial, serial);
    }
    this.records.set(serial, { ...b, parents: [parent] });
    this.setName(parent, name, serial);
    this.merged.add(path);
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
      // A directory of the head's is never dropped whole by a resolution.
      if (!this.resolved.has(e.path) || h.kind === InodeKind.Dir) return this.conflict(e.path, 'both-added', `${e.path}: added on both sides with different content`);
      if (h.kind === wsInode.kind) return void this.records.set(there, { ...wsInode, parents: h.parents });
      // Resolved across a change of kind: the head's entry goes, the Workspace's is created.
      this.unlink(parent, name, there);
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
