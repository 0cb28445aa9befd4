/**
 * verify: re-reads every object reachable from every recorded state through the authenticated
 * read path, checks each state's namespace against every structural invariant of the format
 * (verify-namespace.ts), and names each damaged object or violation with the states that reach
 * it. Subtrees are checked once, however many states share them.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { ObjectKind } from './objects.js';
import type { Store } from './store.js';
import { decodeExtentNode } from './tree/extents.js';
import { ContentForm, decodeInode, InodeKind, keySerial } from './tree/inode.js';
import { decodeNode, TreeKind } from './tree/pages.js';
import { decodeRoot } from './tree/root.js';
import { checkNamespace, NamespaceMemo, storeSource } from './verify-namespace.js';

export interface StateRef {
  /** 'layer' | 'commit' | 'workspace' … */
  kind: string;
  id: string;
  rootId: Buffer;
}

export interface Damage {
  objectId: string;
  message: string;
  /** The states (kind:id) whose trees reach this object. */
  states: string[];
}

export interface VerifyReport {
  ok: boolean;
  states: number;
  objectsChecked: number;
  bytesChecked: number;
  sqliteCheck: string;
  damaged: Damage[];
}

/** SQLite's own damage report (malformed page), as opposed to any other failure. */
function isSqliteCorrupt(e: unknown): boolean {
  return /^SQLITE_CORRUPT/.test((e as { code?: string } | null)?.code ?? '');
}

/** Verify progress: distinct objects re-hashed so far, of the objects the Store holds. */
export interface VerifyProgress {
  objects: number;
  totalObjects: number;
  bytes: number;
}

/** SQLite's quick_check; a damaged B-tree page that stops the check itself is its finding. */
function sqliteCheck(store: Store): string {
  try {
    const rows = store.db.pragma('quick_check') as { quick_check: string }[];
    return rows.map((r) => r.quick_check).join('; ');
  } catch (e) {
    // The object walk still names what it can reach.
    if (!isSqliteCorrupt(e)) throw e;
    return `quick_check failed: ${(e as Error).message}`;
  }
}

/**
 * Authenticated reads of every object under a root, each subtree once: a subtree's result is
 * the damaged object ids in it ([] when it is sound).
 */
class ObjectWalk {
  private readonly memo = new Map<string, string[]>();
  readonly errors = new Map<string, string>();

  constructor(
    private readonly store: Store,
    private readonly report: VerifyReport,
    private readonly onProgress: ((p: VerifyProgress) => void) | undefined,
    private readonly totalObjects: number,
  ) {}

  private fetch(id: Buffer, kind: ObjectKind): Buffer | null {
    const report = this.report;
    try {
      const data = this.store.objects.get(id, kind);
      report.objectsChecked++;
      report.bytesChecked += data.length;
      if (this.onProgress && report.objectsChecked % 512 === 0) this.onProgress({ objects: report.objectsChecked, totalObjects: this.totalObjects, bytes: report.bytesChecked });
      return data;
    } catch (e) {
      // A damaged SQLite page under the object's row is damage to that object.
      if (!(e instanceof LayerFsError) && !isSqliteCorrupt(e)) throw e;
      this.errors.set(toHex(id), (e as Error).message);
      return null;
    }
  }

  private leaf(id: Buffer, kind: ObjectKind): string[] {
    const key = id.toString('latin1');
    const known = this.memo.get(key);
    if (known) return known;
    const r = this.fetch(id, kind) ? [] : [toHex(id)];
    this.memo.set(key, r);
    return r;
  }

  private guarded(id: Buffer, kind: ObjectKind, visit: (data: Buffer) => string[]): string[] {
    const key = id.toString('latin1');
    const known = this.memo.get(key);
    if (known) return known;
    const data = this.fetch(id, kind);
    let r: string[];
    if (!data) r = [toHex(id)];
    else {
      try {
        r = visit(data);
      } catch (e) {
        if (!(e instanceof LayerFsError)) throw e;
        this.errors.set(toHex(id), e.message);
        r = [toHex(id)];
      }
    }
    this.memo.set(key, r);
    return r;
  }

  /**
   * Each child one level below its parent (`level`, -1 at the top): recursion stays within 256
   * levels whatever a forged Store chains together.
   */
  private static levelCheck(id: Buffer, level: number, parent: number): void {
    if (parent >= 0 && level !== parent - 1) throw new LayerFsError('ERR_CORRUPT', `${toHex(id)} is at level ${level} under a node of level ${parent}`);
  }

  private extents(id: Buffer, parent = -1): string[] {
    return this.guarded(id, ObjectKind.Extents, (data) => {
      const node = decodeExtentNode(data, `extent node ${toHex(id)}`);
      ObjectWalk.levelCheck(id, node.level, parent);
      return node.ids.flatMap((c) => (node.level === 0 ? this.leaf(c, ObjectKind.Chunk) : this.extents(c, node.level)));
    });
  }

  private page(kind: TreeKind, id: Buffer, parent = -1): string[] {
    return this.guarded(id, ObjectKind.Page, (data) => {
      const node = decodeNode(kind, data, `page ${toHex(id)}`);
      ObjectWalk.levelCheck(id, node.level, parent);
      if (node.level > 0) return node.vals.flatMap((c) => this.page(kind, c, node.level));
      if (kind === TreeKind.Directory) return [];
      return node.keys.flatMap((k, i) => {
        const inode = decodeInode(node.vals[i]!, keySerial(k));
        if (inode.form === ContentForm.None) return [];
        if (inode.kind === InodeKind.Dir) return this.page(TreeKind.Directory, inode.content!);
        if (inode.form === ContentForm.Whole) return this.leaf(inode.content!, ObjectKind.Blob);
        return this.extents(inode.content!);
      });
    });
  }

  /** Damaged object ids under a state's root. */
  root(rootId: Buffer): string[] {
    return this.guarded(rootId, ObjectKind.Root, (data) => this.page(TreeKind.Inodes, decodeRoot(data, `root ${toHex(rootId)}`).inodes));
  }
}

export function verifyStore(store: Store, states: StateRef[], onProgress?: (p: VerifyProgress) => void): VerifyReport {
  const totalObjects = onProgress ? store.counts().objects : 0;
  const report: VerifyReport = { ok: true, states: states.length, objectsChecked: 0, bytesChecked: 0, sqliteCheck: 'ok', damaged: [] };
  // Every object is read from the file, none from the bytes a recent commit left in memory.
  store.objects.forgetRemembered();
  report.sqliteCheck = sqliteCheck(store);
  const walk = new ObjectWalk(store, report, onProgress, totalObjects);
  const damage = new Map<string, Damage>();
  const add = (key: string, objectId: string, message: string, state: string) => {
    let d = damage.get(key);
    if (!d) damage.set(key, (d = { objectId, message, states: [] }));
    if (!d.states.includes(state)) d.states.push(state);
  };
  const memoNs = new NamespaceMemo();
  const source = storeSource(store);
  const structural = new Map<string, { objectId: string; message: string }[]>();
  for (const s of states) {
    const state = `${s.kind}:${s.id}`;
    const bad = walk.root(s.rootId);
    for (const id of bad) add(id, id, walk.errors.get(id) ?? 'damaged', state);
    // A state whose objects are damaged is reported by them; the namespace is checked on sound ones.
    if (bad.length > 0) continue;
    const key = s.rootId.toString('latin1');
    let found = structural.get(key);
    if (!found) structural.set(key, (found = checkNamespace(source, s.rootId, memoNs)));
    for (const v of found) add(`${v.objectId}\n${v.message}`, v.objectId, v.message, state);
  }
  report.damaged = [...damage.values()];
  report.ok = report.damaged.length === 0 && report.sqliteCheck === 'ok';
  return report;
}
