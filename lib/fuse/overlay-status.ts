/**
 * What changed in the overlay since its base, per path, as a materialized Workspace's status
 * reports it.
 */
import { INODE_KIND_NAMES, InodeKind, ROOT_SERIAL, sameXattrs } from '../store/index.js';
import { OverlayNamespace } from './overlay-namespace.js';
import type { Node } from './overlay-node.js';

/** One changed path of an overlay (Workspace status). */
export interface OverlayChange {
  change: 'added' | 'deleted' | 'modified' | 'renamed';
  path: Buffer;
  oldPath?: Buffer;
  kind: string;
}

/** A path whose state may differ: the serial it had in the base and the one it has now. */
interface Found {
  path: Buffer;
  base: number | undefined;
  now: number | undefined;
}

const SLASH = Buffer.from('/');
const CHANGE_KIND_NAMES: Partial<Record<InodeKind, string>> = INODE_KIND_NAMES;
const NO_ENTRIES: ReadonlyMap<string, number> = new Map();

export abstract class OverlayStatus extends OverlayNamespace {
  /**
   * What changed since the base, per path, like a materialized Workspace's status. Paths are
   * compared, not inodes: the overlay's tree and the base are walked side by side, down only the
   * directories on the way to a change, and below a path whose inode differs, both subtrees
   * whole (every path below a moved or removed directory changed too). A path that holds
   * another inode than in the base is `modified`, or `renamed` when its inode left a base path
   * that disappeared; a new path is `added` (or `renamed`, the same way); a base path that
   * disappeared is `deleted` unless a rename names it; a path with the same inode is
   * `modified` when its record changed (a directory whose entries alone changed is not listed:
   * they are). Hence every name of a hard-linked inode, kept or removed, is judged on its own.
   * The root is left out; at most `limit` entries (sorted by path), `truncated` says when more
   * exist.
   */
  changes(limit = 100_000): { changes: OverlayChange[]; truncated: boolean } {
    const found: Found[] = [];
    this.walkChanged(ROOT_SERIAL, ROOT_SERIAL, null, this.onTheWay(), found);
    const out = this.classify(found);
    out.sort((a, b) => Buffer.compare(a.path, b.path));
    return { changes: out.slice(0, limit), truncated: out.length > limit };
  }

  /** Directories a change lies in or below: those with name edits and every name's directory of a changed record, with their ancestors. */
  private onTheWay(): Set<number> {
    const marked = new Set<number>();
    const up = (from: number) => {
      let s: number | undefined = from;
      while (s !== undefined && !marked.has(s)) {
        marked.add(s);
        if (s === ROOT_SERIAL) break;
        s = this.nodes.get(s)?.parents[0] ?? this.node(s).parents[0];
      }
    };
    for (const d of this.namesChanged) {
      const n = this.nodes.get(d);
      if (n && this.alive(n)) up(d);
    }
    for (const s of this.dirtyRecords) {
      const n = this.nodes.get(s);
      if (n && this.alive(n)) for (const p of n.parents) up(p);
    }
    return marked;
  }

  /**
   * Compares the entries of directory `now` (of the overlay) with those of `base` (of the base
   * state) at `path`; either may be absent (undefined).
   */
  private walkChanged(now: number | undefined, base: number | undefined, path: Buffer | null, marked: Set<number>, out: Found[]): void {
    const cur = now === undefined ? NO_ENTRIES : this.entriesNow(now);
    const old = base === undefined ? NO_ENTRIES : base === now && !this.namesChanged.has(now) ? cur : this.entriesInBase(base);
    const visit = (k: string, sn: number | undefined, sb: number | undefined) => {
      const name = Buffer.from(k, 'latin1');
      const full = path ? Buffer.concat([path, SLASH, name]) : name;
      if (sn !== undefined && sn === sb) {
        const n = this.nodes.get(sn);
        if (n && this.dirtyRecords.has(sn) && !this.entriesOnly(n)) out.push({ path: full, base: sb, now: sn });
        if (marked.has(sn)) this.walkChanged(sn, sb, full, marked, out);
        return;
      }
      out.push({ path: full, base: sb, now: sn });
      const nd = sn !== undefined && this.kindOfSerial(sn) === InodeKind.Dir ? sn : undefined;
      const bd = sb !== undefined && this.kindOfSerial(sb) === InodeKind.Dir ? sb : undefined;
      if (nd !== undefined || bd !== undefined) this.walkChanged(nd, bd, full, marked, out);
    };
    for (const [k, s] of cur) {
      // A bound socket is not part of any state (import and commit leave it out).
      const sn = this.nodes.get(s)?.socket ? undefined : s;
      const sb = old.get(k);
      if (sn !== undefined || sb !== undefined) visit(k, sn, sb);
    }
    if (old !== cur) for (const [k, sb] of old) if (!cur.has(k)) visit(k, undefined, sb);
  }

  /** A live directory's entries, without keeping a node for one that was never loaded. */
  private entriesNow(serial: number): ReadonlyMap<string, number> {
    const n = this.nodes.get(serial);
    return n ? this.children(n) : this.entriesInBase(serial);
  }

  private entriesInBase(serial: number): ReadonlyMap<string, number> {
    const m = new Map<string, number>();
    for (const e of this.view.readdir(this.view.inode(serial))) m.set(e.name.toString('latin1'), e.serial);
    return m;
  }

  /** A serial's kind (kinds never change; a new serial always has its node). */
  private kindOfSerial(serial: number): InodeKind {
    return this.nodes.get(serial)?.kind ?? this.view.inode(serial).kind;
  }

  /** Found paths as changes: an inode that left a path which disappeared and arrived at another was renamed. */
  private classify(found: Found[]): OverlayChange[] {
    const kindOf = (s: number) => CHANGE_KIND_NAMES[this.kindOfSerial(s)] ?? 'unknown';
    // Only a path that disappeared is a rename source (a swap modifies both paths).
    const sources = new Map<number, Found[]>();
    for (const f of found) {
      if (f.now !== undefined || f.base === undefined) continue;
      const list = sources.get(f.base);
      if (list) list.push(f);
      else sources.set(f.base, [f]);
    }
    const consumed = new Set<Found>();
    const out: OverlayChange[] = [];
    for (const f of found) {
      if (f.now === undefined) continue;
      if (f.now === f.base) {
        out.push({ change: 'modified', path: f.path, kind: kindOf(f.now) });
        continue;
      }
      const from = this.nodes.get(f.now)?.inBase === false ? undefined : sources.get(f.now)?.find((x) => !consumed.has(x));
      if (from) {
        consumed.add(from);
        out.push({ change: 'renamed', path: f.path, oldPath: from.path, kind: kindOf(f.now) });
      } else out.push({ change: f.base === undefined ? 'added' : 'modified', path: f.path, kind: kindOf(f.now) });
    }
    for (const f of found) if (f.now === undefined && !consumed.has(f)) out.push({ change: 'deleted', path: f.path, kind: kindOf(f.base!) });
    return out;
  }

  /** A base directory whose mode, owner and xattrs stayed: only its entries changed (listed). */
  private entriesOnly(n: Node): boolean {
    if (n.kind !== InodeKind.Dir) return false;
    const b = this.view.inode(n.serial);
    return b.mode === n.mode && b.uid === n.uid && b.gid === n.gid && sameXattrs(b.xattrs, n.xattrs);
  }
}
