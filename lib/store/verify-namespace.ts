/**
 * The structural half of verify: every invariant docs/FORMAT.md states about one state's
 * namespace, beyond object hashes (which verify.ts checks). A forged Store passes every hash
 * check, so these are what make `verify` say ok only of a state every command can read:
 *
 *   - the root inode (serial 1) exists, is a directory, and no directory names it;
 *   - keys rise strictly within and across the pages of every tree, each child page one level
 *     below its parent (no repeated name, no page reached twice);
 *   - every name is safe (not empty, not `.` or `..`, no `/` or NUL);
 *   - every serial a directory names is in the inode table (no dangling serial);
 *   - a directory serial is reached once (no cycle, no fan-out); files may have many names;
 *   - each reachable inode's `parents` are exactly the directories naming it;
 *   - a file's content agrees with its size: no content means size 0, a blob has `size` bytes,
 *     an extent tree's lengths add up level by level to `size` and each chunk has its length;
 *   - a symlink's size is its target's length; a directory's content is a page tree;
 *   - xattr names are in the `user.` namespace.
 *
 * Each violation names the object it is in (a page, inode table or content root) and, in the
 * report, the states that reach it.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { checkStoredName } from './export.js';
import type { Store } from './store.js';
import { ObjectKind } from './objects.js';
import type { PageIO } from './tree/pages.js';
import { checkExtentNode } from './tree/extent-check.js';
import { decodeExtentNode } from './tree/extents.js';
import { ContentForm, decodeInode, decodeSerial, InodeKind, keySerial, type Inode } from './tree/inode.js';
import { child, entries, TreeKind, type TreeNode } from './tree/pages.js';
import { decodeRoot, ROOT_SERIAL } from './tree/root.js';

export interface Violation {
  objectId: string;
  message: string;
}

/** What the checks read: pages, objects, and an object's size without reading it. */
export interface NamespaceSource {
  pages: PageIO;
  objects: { get(id: Buffer, kind: ObjectKind): Buffer };
  /** The canonical size of a stored object (null when absent). */
  sizeOf(id: Buffer): number | null;
}

/** A Store as a NamespaceSource: sizes come from the objects table (no decompression). */
export function storeSource(store: Store): NamespaceSource {
  const size = store.db.prepare('SELECT size FROM objects WHERE id = ?').pluck();
  return { pages: store.pages, objects: store.objects, sizeOf: (id) => (size.get(id) as number | undefined) ?? null };
}

/** Findings shared across states: per directory tree and per file content. */
export class NamespaceMemo {
  readonly leaves = new Map<string, Leaf>();
  readonly dirs = new Map<string, { names: [Buffer, number][]; problems: Violation[] }>();
  readonly contents = new Map<string, Violation[]>();
}

function messageOf(e: unknown): string {
  if (e instanceof LayerFsError) return e.message;
  throw e;
}

/** The directory tree at `content`: its (name, serial) list and what is wrong with it. */
function listDir(store: NamespaceSource, content: Buffer | null, memo: NamespaceMemo): { names: [Buffer, number][]; problems: Violation[] } {
  if (content === null) return { names: [], problems: [] };
  const key = content.toString('latin1');
  const known = memo.dirs.get(key);
  if (known) return known;
  const out = { names: [] as [Buffer, number][], problems: [] as Violation[] };
  const id = toHex(content);
  try {
    for (const [name, v] of entries(TreeKind.Directory, store.pages, content)) {
      try {
        checkStoredName(name, `directory tree ${id}`);
      } catch (e) {
        out.problems.push({ objectId: id, message: `unsafe name ${JSON.stringify(name.toString('latin1'))} in directory tree ${id}` });
        continue;
      }
      out.names.push([name, decodeSerial(v)]);
    }
  } catch (e) {
    out.problems.push({ objectId: id, message: messageOf(e) });
  }
  memo.dirs.set(key, out);
  return out;
}

/** Checks a file's content against its recorded size (extent lengths, chunk and blob sizes). */
function checkContent(store: NamespaceSource, inode: Inode, memo: NamespaceMemo): Violation[] {
  if (inode.form === ContentForm.None) return inode.size === 0 ? [] : [{ objectId: '', message: `a file of ${inode.size} bytes has no content` }];
  const id = inode.content!;
  const key = `${id.toString('latin1')}:${inode.size}`;
  const known = memo.contents.get(key);
  if (known) return known;
  const out: Violation[] = [];
  try {
    if (inode.form === ContentForm.Whole) {
      const n = store.sizeOf(id);
      if (n === null) out.push({ objectId: toHex(id), message: `blob ${toHex(id)} is missing from the Store` });
      else if (n !== inode.size) out.push({ objectId: toHex(id), message: `blob ${toHex(id)} has ${n} bytes where ${inode.size} are recorded` });
    } else {
      const stack: { id: Buffer; expected: number; parentLevel: number | null }[] = [{ id, expected: inode.size, parentLevel: null }];
      while (stack.length > 0 && out.length === 0) {
        const f = stack.pop()!;
        const node = checkExtentNode(decodeExtentNode(store.objects.get(f.id, ObjectKind.Extents), `extent node ${toHex(f.id)}`), f.id, f.expected, f.parentLevel);
        node.ids.forEach((c, i) => {
          if (node.level > 0) return void stack.push({ id: c, expected: node.lengths[i]!, parentLevel: node.level });
          const n = store.sizeOf(c);
          if (n === null) out.push({ objectId: toHex(c), message: `chunk ${toHex(c)} is missing from the Store` });
          else if (n !== node.lengths[i]) out.push({ objectId: toHex(c), message: `chunk ${toHex(c)} has ${n} bytes where ${node.lengths[i]} are recorded` });
        });
      }
    }
  } catch (e) {
    out.push({ objectId: toHex(id), message: messageOf(e) });
  }
  memo.contents.set(key, out);
  return out;
}

/** The per-inode checks that need no tree: kind-specific content form, symlink size, xattr namespace. */
function checkInode(serial: number, inode: Inode, tableId: string): Violation[] {
  const out: Violation[] = [];
  const at = (message: string) => out.push({ objectId: tableId, message: `inode ${serial}: ${message}` });
  if (inode.kind === InodeKind.Dir && inode.form === ContentForm.Extents) at('a directory with an extent tree');
  if (inode.kind !== InodeKind.Dir && inode.kind !== InodeKind.File && inode.form !== ContentForm.None) at(`a ${InodeKind[inode.kind]} with content`);
  if (inode.kind === InodeKind.Symlink && inode.target!.length !== inode.size) at(`symlink size ${inode.size} but a target of ${inode.target!.length} bytes`);
  for (const x of inode.xattrs) if (!x.name.toString('latin1').startsWith('user.')) at(`xattr ${JSON.stringify(x.name.toString('latin1'))} is outside the user. namespace`);
  return out;
}

interface Leaf {
  serials: number[];
  inodes: Inode[];
  /** Decoding and per-inode problems (kind, symlink size, xattrs, content), by serial. */
  problems: Map<number, Violation[]>;
  /** Problems of the page itself (a record that does not decode). */
  pageProblems: Violation[];
}

/** A leaf page of the inode table, decoded and checked once however many states share it. */
function leafOf(store: NamespaceSource, id: Buffer, node: TreeNode, memo: NamespaceMemo): Leaf {
  const key = id.toString('latin1');
  const known = memo.leaves.get(key);
  if (known) return known;
  const pageId = toHex(id);
  const leaf: Leaf = { serials: [], inodes: [], problems: new Map(), pageProblems: [] };
  node.keys.forEach((k, i) => {
    let serial: number;
    let inode: Inode;
    try {
      serial = keySerial(k);
      inode = decodeInode(node.vals[i]!, serial);
    } catch (e) {
      leaf.pageProblems.push({ objectId: pageId, message: messageOf(e) });
      return;
    }
    leaf.serials.push(serial);
    leaf.inodes.push(inode);
    const found = checkInode(serial, inode, pageId);
    if (inode.kind === InodeKind.File) for (const v of checkContent(store, inode, memo)) found.push({ objectId: v.objectId || pageId, message: `inode ${serial}: ${v.message}` });
    if (found.length > 0) leaf.problems.set(serial, found);
  });
  memo.leaves.set(key, leaf);
  return leaf;
}

/**
 * The inode table of a state: its records by serial, with the table's own problems (pages out
 * of order or shape, records that do not decode). Leaves are memoized across states.
 */
function readTable(store: NamespaceSource, inodesRoot: Buffer, memo: NamespaceMemo, out: Violation[]): { table: Map<number, Inode>; leaves: Leaf[] } {
  const table = new Map<number, Inode>();
  const leaves: Leaf[] = [];
  let last = -1;
  try {
    const stack: { id: Buffer; node: TreeNode }[] = [{ id: inodesRoot, node: store.pages.load(TreeKind.Inodes, inodesRoot) }];
    while (stack.length > 0) {
      const { id, node } = stack.pop()!;
      if (node.level > 0) {
        for (let i = node.vals.length - 1; i >= 0; i--) stack.push({ id: node.vals[i]!, node: child(TreeKind.Inodes, store.pages, node, i) });
        continue;
      }
      const leaf = leafOf(store, id, node, memo);
      out.push(...leaf.pageProblems);
      if (leaf.serials.length > 0 && leaf.serials[0]! <= last) throw new LayerFsError('ERR_CORRUPT', `inode table ${toHex(inodesRoot)}: serial ${leaf.serials[0]} repeats or is out of order across pages`);
      for (let i = 0; i < leaf.serials.length; i++) table.set(leaf.serials[i]!, leaf.inodes[i]!);
      if (leaf.serials.length > 0) last = leaf.serials[leaf.serials.length - 1]!;
      leaves.push(leaf);
    }
  } catch (e) {
    out.push({ objectId: toHex(inodesRoot), message: messageOf(e) });
  }
  return { table, leaves };
}

/** Whether `named` (walk order) and `recorded` (ascending) hold the same serials. */
function sameParents(named: number[], recorded: number[]): boolean {
  if (named.length !== recorded.length) return false;
  if (named.length === 1) return named[0] === recorded[0];
  const a = [...named].sort((x, y) => x - y);
  return a.every((v, i) => v === recorded[i]);
}

/** Every structural violation of the state at `rootId`. */
export function checkNamespace(store: NamespaceSource, rootId: Buffer, memo: NamespaceMemo): Violation[] {
  let inodesRoot: Buffer;
  try {
    inodesRoot = decodeRoot(store.objects.get(rootId, ObjectKind.Root), `root ${toHex(rootId)}`).inodes;
  } catch (e) {
    // verify.ts reports an unreadable root with the object pass; alone, this is the finding.
    return [{ objectId: toHex(rootId), message: messageOf(e) }];
  }
  const tableId = toHex(inodesRoot);
  const out: Violation[] = [];
  const { table, leaves } = readTable(store, inodesRoot, memo, out);
  const root = table.get(ROOT_SERIAL);
  if (!root || root.kind !== InodeKind.Dir) return [...out, { objectId: tableId, message: `the root inode ${ROOT_SERIAL} is ${root ? 'not a directory' : 'missing'}` }];
  // serial → the directories naming it, in walk order.
  const namedIn = new Map<number, number[]>();
  const reachedDirs = new Set<number>([ROOT_SERIAL]);
  const stack = [ROOT_SERIAL];
  while (stack.length > 0) {
    const dirSerial = stack.pop()!;
    const dir = table.get(dirSerial)!;
    const listing = listDir(store, dir.content, memo);
    if (listing.problems.length > 0) out.push(...listing.problems);
    for (const [name, serial] of listing.names) {
      const child = table.get(serial);
      if (!child) {
        out.push({ objectId: dir.content ? toHex(dir.content) : tableId, message: `directory inode ${dirSerial} names ${JSON.stringify(name.toString('latin1'))} → inode ${serial}, which is missing from the inode table` });
        continue;
      }
      const parents = namedIn.get(serial);
      if (parents) parents.push(dirSerial);
      else namedIn.set(serial, [dirSerial]);
      if (child.kind !== InodeKind.Dir) continue;
      if (reachedDirs.has(serial)) {
        out.push({ objectId: dir.content ? toHex(dir.content) : tableId, message: `directory inode ${serial} is reached a second time (as ${JSON.stringify(name.toString('latin1'))} in directory inode ${dirSerial}): a cycle or fan-out` });
        continue;
      }
      reachedDirs.add(serial);
      stack.push(serial);
    }
  }
  for (const leaf of leaves) {
    for (let i = 0; i < leaf.serials.length; i++) {
      const serial = leaf.serials[i]!;
      const names = namedIn.get(serial);
      // Unreachable records are not part of the state.
      if (!names && serial !== ROOT_SERIAL) continue;
      const found = leaf.problems.get(serial);
      if (found) out.push(...found);
      const recorded = leaf.inodes[i]!.parents ?? [];
      if (!sameParents(names ?? [], recorded)) out.push({ objectId: tableId, message: `inode ${serial} records parents [${recorded.join(',')}] but is named in [${[...(names ?? [])].sort((a, b) => a - b).join(',')}]` });
    }
  }
  return out;
}
