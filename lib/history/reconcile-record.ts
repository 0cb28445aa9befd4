/**
 * Three-way merge of one inode record (the base's, the head's, the Workspace's): each field
 * group is taken from the side that changed it; a group both sides changed differently is a
 * conflict, except file content, which is merged line by line when all three versions are text
 * (node-diff3), and byte by byte otherwise when the two sides changed different bytes
 * (reconcile-bytes.ts; never for SQLite, zip and other formats whose bytes refer to each other).
 */
import { diff3Merge } from 'node-diff3';
import { InodeKind, sameXattrs, type Inode } from '../store/tree/inode.js';
import { storeBytes } from '../store/import/content.js';
import type { FsView } from '../store/tree/view.js';
import type { ObjectReader, ObjectWriter } from '../store/objects.js';
import { mergeBytes } from './reconcile-bytes.js';
import { mergeChunked, type ByteConflict } from './reconcile-chunks.js';

export type { ByteConflict } from './reconcile-chunks.js';

export type ConflictKind = 'both-modified' | 'both-added' | 'delete-modify' | 'modify-delete' | 'type-change' | 'binary' | 'text' | 'rename-rename' | 'rename-delete';

/** Lines [start, end) of one text conflict, 0-based, in each version. */
export interface LineConflict {
  base: [number, number];
  head: [number, number];
  workspace: [number, number];
}

/** What the record merge needs to read and store content. */
export interface RecordMergeContext {
  base: FsView;
  head: FsView;
  workspace: FsView;
  w: ObjectWriter;
  objects: ObjectReader;
}

export type RecordMerge =
  | { ok: true; inode: Inode; combined: boolean }
  | { ok: false; kind: ConflictKind; message: string; lines?: LineConflict[]; ranges?: ByteConflict[] };

/**
 * Larger files are not read whole (each side would be held in memory three times): they merge
 * chunk by chunk (reconcile-chunks.ts), text included, by the byte-level rule.
 */
export const TEXT_MERGE_MAX = 64 * 1024 * 1024;

function sameBytes(a: Buffer | null | undefined, b: Buffer | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  return a.equals(b);
}

function sameContent(a: Inode, b: Inode): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === InodeKind.Dir) return true; // names are merged path by path, not here
  return a.form === b.form && a.size === b.size && sameBytes(a.content, b.content) && sameBytes(a.target, b.target) && (a.rdev ?? 0) === (b.rdev ?? 0);
}

/** Field groups a side can change independently of the others. */
const GROUPS: { name: string; same: (a: Inode, b: Inode) => boolean; copy: (to: Inode, from: Inode) => void }[] = [
  { name: 'mode', same: (a, b) => a.mode === b.mode, copy: (t, f) => void (t.mode = f.mode) },
  { name: 'owner', same: (a, b) => a.uid === b.uid && a.gid === b.gid, copy: (t, f) => void ((t.uid = f.uid), (t.gid = f.gid)) },
  { name: 'xattrs', same: (a, b) => sameXattrs(a.xattrs, b.xattrs), copy: (t, f) => void (t.xattrs = f.xattrs) },
];

function copyContent(to: Inode, from: Inode): void {
  to.kind = from.kind;
  to.form = from.form;
  to.content = from.content;
  to.size = from.size;
  to.target = from.target;
  to.rdev = from.rdev;
}

/**
 * Merges base → head and base → workspace changes of one inode into the head's record (its
 * parents and, for directories, its name tree stay the head's). `path` is for messages.
 */
export function mergeRecord(ctx: RecordMergeContext, b: Inode, h: Inode, ws: Inode, path: string): RecordMerge {
  const out: Inode = { ...h, xattrs: h.xattrs, parents: h.parents };
  let combined = false;
  if (!sameContent(h, ws)) {
    if (sameContent(b, h)) copyContent(out, ws);
    else if (!sameContent(b, ws)) {
      if (h.kind !== ws.kind || b.kind !== h.kind || b.kind !== ws.kind) return { ok: false, kind: 'type-change', message: `${path}: the kind changed on one side and the entry changed on the other` };
      if (h.kind !== InodeKind.File) return { ok: false, kind: 'both-modified', message: `${path}: changed on both sides` };
      const m = mergeFileContent(ctx, b, h, ws, path);
      if (!m.ok) return m;
      copyContent(out, m.inode);
      combined = true;
    }
  }
  for (const g of GROUPS) {
    if (g.same(h, ws)) continue;
    if (g.same(b, h)) g.copy(out, ws);
    else if (!g.same(b, ws)) return { ok: false, kind: 'both-modified', message: `${path}: ${g.name} changed differently on both sides` };
    else continue;
    if (!g.same(b, h)) combined = true;
  }
  // mtime is when the content was last written: the later of the two edits.
  if (ws.mtimeNs !== h.mtimeNs && ws.mtimeNs !== b.mtimeNs) out.mtimeNs = h.mtimeNs === b.mtimeNs || ws.mtimeNs > h.mtimeNs ? ws.mtimeNs : h.mtimeNs;
  if (!combined && !sameContent(b, h) && !sameContent(b, ws)) combined = true;
  return { ok: true, inode: out, combined };
}

function isText(data: Buffer): boolean {
  if (data.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(data);
    return true;
  } catch {
    return false;
  }
}

/** Lines with their terminators, so joining them gives back the exact bytes. */
function lines(text: string): string[] {
  return text.length === 0 ? [] : text.split(/(?<=\n)/);
}

function mergeFileContent(ctx: RecordMergeContext, b: Inode, h: Inode, ws: Inode, path: string): { ok: true; inode: Inode } | Extract<RecordMerge, { ok: false }> {
  if (Math.max(b.size, h.size, ws.size) > TEXT_MERGE_MAX) {
    const m = mergeChunked(ctx.objects, ctx.w, b, h, ws);
    if (!m.ok) return { ok: false, kind: 'binary', message: `${path}: ${m.message}`, ranges: m.ranges };
    return { ok: true, inode: { ...ws, form: m.stored.form, content: m.stored.content, size: m.size } };
  }
  const texts = [ctx.base.readFile(b), ctx.head.readFile(h), ctx.workspace.readFile(ws)];
  if (!texts.every(isText)) {
    const m = mergeBytes(texts[0]!, texts[1]!, texts[2]!);
    if (!m.ok) return { ok: false, kind: 'binary', message: `${path}: ${m.message}` };
    const stored = storeBytes(m.bytes, ctx.w);
    return { ok: true, inode: { ...ws, form: stored.form, content: stored.content, size: m.bytes.length } };
  }
  const [o, a, x] = texts.map((t) => lines(t.toString('utf8')));
  const regions = diff3Merge(a!, o!, x!, { excludeFalseConflicts: true });
  const merged: string[] = [];
  const conflicts: LineConflict[] = [];
  for (const r of regions) {
    if (r.ok) merged.push(...r.ok);
    else if (r.conflict) {
      const c = r.conflict;
      conflicts.push({ base: [c.oIndex, c.oIndex + c.o.length], head: [c.aIndex, c.aIndex + c.a.length], workspace: [c.bIndex, c.bIndex + c.b.length] });
    }
  }
  if (conflicts.length > 0) {
    const first = conflicts[0]!;
    return { ok: false, kind: 'text', message: `${path}: both sides changed overlapping lines (first at base line ${first.base[0] + 1})`, lines: conflicts };
  }
  const bytes = Buffer.from(merged.join(''), 'utf8');
  const stored = storeBytes(bytes, ctx.w);
  return { ok: true, inode: { ...ws, form: stored.form, content: stored.content, size: bytes.length } };
}
