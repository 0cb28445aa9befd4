/**
 * What changed in the overlay since its base, per path, as a materialized Workspace's status
 * reports it.
 */
import { INODE_KIND_NAMES, InodeKind, ROOT_SERIAL } from '../store/index.js';
import { OverlayNamespace } from './overlay-namespace.js';
import type { Node } from './overlay-nodes.js';

/** One changed path of an overlay (Workspace status). */
export interface OverlayChange {
  change: 'added' | 'deleted' | 'modified' | 'renamed';
  path: Buffer;
  oldPath?: Buffer;
  kind: string;
}

const SLASH = Buffer.from('/');
const CHANGE_KIND_NAMES: Partial<Record<InodeKind, string>> = INODE_KIND_NAMES;

export abstract class OverlayStatus extends OverlayNamespace {
  /**
   * What changed since the base, per path, like a materialized Workspace's status: new inodes
   * are `added`, base inodes whose first name moved are `renamed`, other changed records
   * `modified`, and base inodes without a name left `deleted` (at their base path). The root is
   * left out; at most `limit` entries (sorted by path), `truncated` says when more exist.
   */
  changes(limit = 100_000): { changes: OverlayChange[]; truncated: boolean } {
    const out: OverlayChange[] = [];
    const kindOf = (k: InodeKind) => CHANGE_KIND_NAMES[k] ?? 'unknown';
    // Changed records, and inodes that only got a new name (a rename keeps the record).
    const serials = new Set(this.dirtyRecords);
    for (const edits of this.nameEdits.values()) for (const e of edits.values()) if (e.serial !== null) serials.add(e.serial);
    for (const serial of serials) {
      if (serial === ROOT_SERIAL) continue;
      const n = this.nodes.get(serial);
      if (!n || !this.alive(n) || n.socket) continue;
      const path = this.pathOf(n);
      if (path === null) continue;
      // Further names of a hard-linked inode: each new one added, the others changed with it.
      for (const other of n.kind === InodeKind.Dir || n.parents.length < 2 ? [] : this.otherPaths(n, path)) {
        out.push({ change: n.inBase && this.inBase(other) ? 'modified' : 'added', path: other, kind: kindOf(n.kind) });
      }
      if (!n.inBase) {
        out.push({ change: 'added', path, kind: kindOf(n.kind) });
        continue;
      }
      const old = this.view.pathOf(serial);
      if (old && !old.equals(path)) out.push({ change: 'renamed', path, oldPath: old, kind: kindOf(n.kind) });
      else if (this.dirtyRecords.has(serial) && !this.entriesOnly(n)) out.push({ change: 'modified', path, kind: kindOf(n.kind) });
    }
    this.settle(out);
    out.sort((a, b) => Buffer.compare(a.path, b.path));
    return { changes: out.slice(0, limit), truncated: out.length > limit };
  }

  /** Every name of a live inode but `first`. */
  private otherPaths(n: Node, first: Buffer): Buffer[] {
    const out: Buffer[] = [];
    for (const p of new Set(n.parents)) {
      const d = this.node(p);
      const dirPath = p === ROOT_SERIAL ? null : this.pathOf(d);
      if (p !== ROOT_SERIAL && dirPath === null) continue;
      for (const [k, s] of this.children(d)) {
        if (s !== n.serial) continue;
        const name = Buffer.from(k, 'latin1');
        const full = dirPath ? Buffer.concat([dirPath, SLASH, name]) : name;
        if (!full.equals(first)) out.push(full);
      }
    }
    return out;
  }

  /** Deleted base serials and renames, judged against what now sits at each path. */
  private settle(out: OverlayChange[]): void {
    const kindOf = (k: InodeKind) => CHANGE_KIND_NAMES[k] ?? 'unknown';
    // A path deleted and re-created (`sed -i` renames a new file over it) is modified; one a
    // rename moved something over was overwritten, which the rename says.
    const arrived = new Map(out.map((c) => [c.path.toString('latin1'), c]));
    // Only a path that disappeared is a rename source (a swap modifies both paths).
    for (const c of out) {
      if (c.change !== 'renamed' || !arrived.has(c.oldPath!.toString('latin1'))) continue;
      c.change = this.inBase(c.path) ? 'modified' : 'added';
      delete c.oldPath;
    }
    for (const serial of this.deleted) {
      const old = this.view.pathOf(serial);
      if (!old) continue;
      const now = arrived.get(old.toString('latin1'));
      if (now?.change === 'added') now.change = 'modified';
      else if (!now) out.push({ change: 'deleted', path: old, kind: kindOf(this.view.inode(serial).kind) });
    }
  }

  private inBase(path: Buffer): boolean {
    try {
      this.view.resolve(path.toString('latin1').split('/').map((x) => Buffer.from(x, 'latin1')), path.toString());
      return true;
    } catch {
      return false;
    }
  }

  /** A base directory whose mode, owner and xattrs stayed: only its entries changed (listed). */
  private entriesOnly(n: Node): boolean {
    if (n.kind !== InodeKind.Dir) return false;
    const b = this.view.inode(n.serial);
    const sameX = b.xattrs.length === n.xattrs.length && b.xattrs.every((x, i) => x.name.equals(n.xattrs[i]!.name) && x.value.equals(n.xattrs[i]!.value));
    return b.mode === n.mode && b.uid === n.uid && b.gid === n.gid && sameX;
  }

  /** The current path of a live inode through its first parent (null when unreachable). */
  protected pathOf(n: Node): Buffer | null {
    const parts: Buffer[] = [];
    let cur = n;
    while (cur.serial !== ROOT_SERIAL) {
      const p = cur.parents[0];
      if (p === undefined) return null;
      const d = this.node(p);
      let name: string | undefined;
      for (const [k, s] of this.children(d)) {
        if (s === cur.serial) {
          name = k;
          break;
        }
      }
      if (name === undefined) return null;
      parts.push(Buffer.from(name, 'latin1'));
      cur = d;
    }
    return Buffer.concat(parts.reverse().flatMap((b, i) => (i ? [SLASH, b] : [b])));
  }
}
