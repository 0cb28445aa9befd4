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
      if (!n.inBase) {
        out.push({ change: 'added', path, kind: kindOf(n.kind) });
        continue;
      }
      const old = this.view.pathOf(serial);
      if (old && !old.equals(path)) out.push({ change: 'renamed', path, oldPath: old, kind: kindOf(n.kind) });
      else if (this.dirtyRecords.has(serial)) out.push({ change: 'modified', path, kind: kindOf(n.kind) });
    }
    for (const serial of this.deleted) {
      const old = this.view.pathOf(serial);
      if (old) out.push({ change: 'deleted', path: old, kind: '' });
    }
    out.sort((a, b) => Buffer.compare(a.path, b.path));
    return { changes: out.slice(0, limit), truncated: out.length > limit };
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
