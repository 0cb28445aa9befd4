/**
 * The reconcile model's states and its three-way merge (reconcile-model.test.ts). A state maps
 * each path to an entry with an identity: base files are their base path, a file a Workspace
 * adds or rewrites under a new name is a new one. The merge follows identities, as the Store's
 * serials do: an entry renamed on one side and edited on the other lands at the new path with
 * both edits; a rename that also rewrote the content is a delete of the old identity and a new
 * one (what the reconciler does, because a new file may take a deleted file's inode number).
 */
import { diff3Merge } from 'node-diff3';

export type Content = string | Buffer;
/** Path → content: what a directory holds. */
export type Tree = Map<string, Content>;
export interface Entry {
  id: string;
  c: Content;
}
/** Path → entry. */
export type State = Map<string, Entry>;

export const TEXTS = ['t/a.txt', 't/b.txt', 'c.txt'];
export const BIN = 'bin/data.bin';
/** Edited only by range edits; its bytes are distinct and every replacement byte is >= 0x80. */
export const RB = 'bin/ranges.bin';
export const RB_SIZE = 128;


/** A range edit of RB in base coordinates (every Workspace starts from the base). */
export interface Edit {
  start: number;
  deleteLength: number;
  bytes: Buffer;
}


/** Same-length edits (one or two, apart), or one edit that makes the file longer. */
export function rangeEdits(r: () => number, ws: number): Edit[] {
  const fill = (n: number) => Buffer.from(Array.from({ length: n }, (_, k) => 0x80 | (ws * 20 + k)));
  if (r() < 0.5) {
    const a = Math.floor(r() * 100);
    const edits = [{ start: a, deleteLength: 1 + Math.floor(r() * 8), bytes: Buffer.alloc(0) }];
    if (r() < 0.5) edits.push({ start: a + edits[0]!.deleteLength + Math.floor(r() * 10), deleteLength: 1 + Math.floor(r() * 6), bytes: Buffer.alloc(0) });
    return edits.filter((e) => e.start + e.deleteLength <= RB_SIZE).map((e) => ({ ...e, bytes: fill(e.deleteLength) }));
  }
  const start = Math.floor(r() * (RB_SIZE + 1));
  const deleteLength = Math.min(Math.floor(r() * 5), RB_SIZE - start);
  return [{ start, deleteLength, bytes: fill(deleteLength + 1 + Math.floor(r() * 4)) }];
}

export function applyEdits(base: Buffer, edits: Edit[]): Buffer {
  let out = base;
  for (const e of [...edits].sort((a, b) => b.start - a.start)) out = Buffer.concat([out.subarray(0, e.start), e.bytes, out.subarray(e.start + e.deleteLength)]);
  return out;
}

/** The model of the byte-level rule, from the edits themselves: the merged edits, or null for a conflict. */
export function mergeEdits(head: Edit[], ws: Edit[]): Edit[] | null {
  if (head.length === 0 || ws.length === 0) return [...head, ...ws];
  const grows = (es: Edit[]) => es.some((e) => e.bytes.length !== e.deleteLength);
  const spans = (es: Edit[]) => es.map((e) => [e.start, e.start + e.deleteLength] as const);
  const regions = (es: Edit[]) => (grows(es) ? [[Math.min(...es.map((e) => e.start)), Math.max(...es.map((e) => e.start + e.deleteLength))] as const] : spans(es));
  const lengthKept = !grows(head) && !grows(ws);
  for (const [hs, he] of regions(head)) {
    for (const [ws0, we] of regions(ws)) {
      const clash = lengthKept ? hs < we && ws0 < he : hs <= we && ws0 <= he;
      if (clash) return null;
    }
  }
  return [...head, ...ws];
}
export type Op =
  | { op: 'line'; path: string; line: number; text: string }
  | { op: 'add'; path: string; text: string }
  | { op: 'delete'; path: string }
  /** A rename alone. */
  | { op: 'rename'; from: string; to: string }
  /** A rename and a rewrite: what a new file that takes a deleted file's inode number looks like. */
  | { op: 'move'; from: string; to: string; text: string }
  | { op: 'binary'; byte: number }
  | { op: 'ranges'; edits: Edit[] };

export const same = (a: string | Buffer | undefined, b: string | Buffer | undefined) => (a === undefined || b === undefined ? a === b : Buffer.from(a).equals(Buffer.from(b)));
const lines = (s: string) => (s.length === 0 ? [] : s.split(/(?<=\n)/));

/** Same-length binary content: each byte from the side that changed it, null when both did differently. */
function mergeSameLength(b: Buffer, h: Buffer, w: Buffer): Buffer | null {
  const out = Buffer.from(h);
  for (let i = 0; i < b.length; i++) {
    if (w[i] === b[i]) continue;
    if (h[i] !== b[i] && h[i] !== w[i]) return null;
    out[i] = w[i]!;
  }
  return out;
}

export const rangesOf = (ops: Op[]) => ops.flatMap((o) => (o.op === 'ranges' ? o.edits : []));

export function baseState(): State {
  const t: State = new Map();
  const put = (p: string, c: Content) => t.set(p, { id: p, c });
  for (const p of TEXTS) put(p, Array.from({ length: 12 }, (_, i) => `${p} line ${i}\n`).join(''));
  put(BIN, Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
  put(RB, Buffer.from(Array.from({ length: RB_SIZE }, (_, i) => i)));
  put('keep.txt', 'untouched\n');
  return t;
}

export const contents = (s: State): Tree => new Map([...s].map(([p, e]) => [p, e.c]));

/**
 * A name to rename or move to: a shared one or a fresh one. Not over another base file: the
 * Store's diff then matches the head's entries by path as much as by serial, which this model's
 * identities do not follow.
 */
function target(r: () => number, ws: number, i: number, tag: string): string {
  return r() < 0.3 ? 'shared-new.txt' : `new/${tag}${ws}-${i}.txt`;
}

export function script(r: () => number, ws: number): Op[] {
  const ops: Op[] = [];
  const n = 1 + Math.floor(r() * 3);
  const pickText = () => TEXTS[Math.floor(r() * TEXTS.length)]!;
  for (let i = 0; i < n; i++) {
    const k = r();
    if (k < 0.5) ops.push({ op: 'line', path: pickText(), line: Math.floor(r() * 12), text: `edited by w${ws}.${i}` });
    else if (k < 0.67) ops.push({ op: 'add', path: r() < 0.2 ? 'shared-new.txt' : `new/w${ws}-${i}.txt`, text: `added by w${ws}.${i}\n` });
    else if (k < 0.74) ops.push({ op: 'rename', from: pickText(), to: target(r, ws, i, 'r') });
    else if (k < 0.79) ops.push({ op: 'move', from: pickText(), to: target(r, ws, i, 'm'), text: `moved by w${ws}.${i}\n` });
    else if (k < 0.84) ops.push({ op: 'delete', path: pickText() });
    else if (k < 0.9 || ops.some((o) => o.op === 'ranges')) ops.push({ op: 'binary', byte: Math.floor(r() * 64) });
    else ops.push({ op: 'ranges', edits: rangeEdits(r, ws) });
  }
  return ops;
}

/** Workspace `ws`'s state after its script. */
export function apply(state: State, ops: Op[], ws: number): State {
  const t: State = new Map(state);
  ops.forEach((o, i) => {
    if (o.op === 'line') {
      const cur = t.get(o.path);
      if (!cur || typeof cur.c !== 'string') return;
      const ls = cur.c.split('\n');
      ls[o.line] = o.text;
      t.set(o.path, { id: cur.id, c: ls.join('\n') });
    } else if (o.op === 'add') t.set(o.path, { id: t.get(o.path)?.id ?? `w${ws}.${i}`, c: o.text });
    else if (o.op === 'rename' || o.op === 'move') {
      const cur = t.get(o.from);
      if (!cur || o.from === o.to) return;
      t.delete(o.from);
      t.set(o.to, o.op === 'rename' ? cur : { id: cur.id, c: o.text });
    } else if (o.op === 'delete') t.delete(o.path);
    else if (o.op === 'ranges') t.set(RB, { id: RB, c: applyEdits(t.get(RB)!.c as Buffer, o.edits) });
    else {
      const b = Buffer.from(t.get(BIN)!.c as Buffer);
      b[o.byte] = (ws * 37 + o.byte) & 0xff;
      t.set(BIN, { id: BIN, c: b });
    }
  });
  return t;
}

/**
 * A state's entries by identity, as the Store's diff pairs them: a base path that still holds
 * an entry is that base entry (modified); an entry whose base path disappeared is that entry
 * renamed when its content is unchanged, and a new one when it was rewritten too (the
 * reconciler's rule for a rename with a rewrite); anything else is new.
 */
function normalized(base: State, s: State, side: string): Map<string, Located> {
  const out = new Map<string, Located>();
  for (const [path, e] of s) {
    let key = path;
    if (!base.has(path)) {
      const b = base.get(e.id);
      key = b !== undefined && !s.has(e.id) && same(b.c, e.c) ? e.id : freshKey(side, e.id, path);
    }
    out.set(key, { path, c: e.c, id: e.id });
  }
  return out;
}

/** A new identity of one side's: two sides' never meet. */
const freshKey = (side: string, id: string, path: string) => `${side}:${id}@${path}`;

/** An entry of a state by its (normalized) identity: where it is, and its identity in the state. */
interface Located {
  path: string;
  c: Content;
  id: string;
}

/** Content merge of one identity both sides changed; null: a conflict. */
function mergeContent(p: string, b: Content, h: Content, w: Content, headEdits: Edit[], wsEdits: Edit[]): { c: Content; edits?: Edit[] } | null {
  if (same(h, b)) return { c: w };
  if (same(w, b) || same(h, w)) return { c: h };
  if (typeof b === 'string' && typeof h === 'string' && typeof w === 'string') {
    const regions = diff3Merge(lines(h), lines(b), lines(w), { excludeFalseConflicts: true });
    return regions.every((x) => x.ok) ? { c: regions.flatMap((x) => x.ok!).join('') } : null;
  }
  if (p === RB) {
    const merged = mergeEdits(headEdits, wsEdits);
    return merged ? { c: applyEdits(b as Buffer, merged), edits: merged } : null;
  }
  if (Buffer.isBuffer(b) && Buffer.isBuffer(h) && Buffer.isBuffer(w) && b.length === h.length && b.length === w.length) {
    const merged = mergeSameLength(b, h, w);
    return merged ? { c: merged } : null;
  }
  return null;
}

/** Where an identity lands: its path, content and inode (the head's, where it has one), and who put it there. */
interface Placed {
  path: string;
  c: Content;
  /** Its identity in the resulting state. */
  id: string;
  /** The Workspace put it there: a rename of a base entry (`renamed`) or a new entry (`added`). */
  by?: 'renamed' | 'added';
}

/**
 * The model's three-way result: the merged state and RB's edits, or the conflicting paths. Each
 * identity merges on its own (path and content); a conflict is reported at the Workspace's path
 * of it, or its base path where the Workspace deleted it. Then two identities at one path
 * conflict there, except a new Workspace entry equal to what the head has (a conflicting
 * identity keeps the head's place for this).
 */
export function model(base: State, head: State, ws: State, headEdits: Edit[], wsEdits: Edit[]): { state: State; edits: Edit[]; conflicts: string[] } {
  const B = normalized(base, base, 'base');
  const H = normalized(base, head, 'head');
  const W = normalized(base, ws, 'ws');
  // One identity after all: the head's rename with a rewrite and a Workspace's edit in place
  // (the reconciler carries an edit across the head's renames), and the same rename on both
  // sides where one also rewrote the file.
  const unify = (lacking: Map<string, Located>, side: string, state: State, other: Map<string, Located>, edits: boolean) => {
    for (const [id, o] of other) {
      const b = B.get(id);
      if (!b || lacking.has(id)) continue;
      const there = [...state].find(([, e]) => e.id === id);
      if (!there) continue;
      const edited = edits && o.path === b.path && !same(o.c, b.c);
      if (!edited && !(o.path !== b.path && there[0] === o.path)) continue;
      lacking.delete(freshKey(side, id, there[0]));
      lacking.set(id, { path: there[0], c: there[1].c, id });
    }
  };
  unify(H, 'head', head, W, true);
  unify(W, 'ws', ws, H, false);
  const conflicts = new Set<string>();
  const placed = new Map<string, Placed>();
  let edits = headEdits;
  for (const id of new Set([...B.keys(), ...H.keys(), ...W.keys()])) {
    const b = B.get(id);
    const h = H.get(id);
    const w = W.get(id);
    const unchanged = (x: typeof b) => (x === undefined || b === undefined ? x === b : x.path === b.path && same(x.c, b.c));
    if (unchanged(w)) {
      if (h) placed.set(id, { path: h.path, c: h.c, id: h.id });
      continue;
    }
    if (!b) {
      // A new entry keeps its inode unless the head changed that inode and still has it (a
      // rename with a rewrite that met the head's change of the old path: it is renumbered).
      const hx = [...head].find(([, e]) => e.id === w!.id);
      const taken = hx !== undefined && !(hx[0] === w!.id && same(hx[1].c, base.get(w!.id)?.c));
      placed.set(id, { path: w!.path, c: w!.c, id: taken ? id : w!.id, by: 'added' });
      continue;
    }
    if (unchanged(h)) {
      if (w) placed.set(id, { path: w.path, c: w.c, id: h?.id ?? w.id, ...(w.path !== b.path ? { by: 'renamed' as const } : {}) });
      continue;
    }
    if (!w || !h) {
      if (w || h) conflicts.add(w ? w.path : b.path);
      if (h) placed.set(id, { path: h.path, c: h.c, id: h.id });
      continue;
    }
    if (w.path !== b.path && h.path !== b.path && w.path !== h.path) {
      conflicts.add(w.path);
      placed.set(id, { path: h.path, c: h.c, id: h.id });
      continue;
    }
    const m = mergeContent(b.path, b.c, h.c, w.c, headEdits, wsEdits);
    if (!m) {
      conflicts.add(w.path);
      placed.set(id, { path: h.path, c: h.c, id: h.id });
      continue;
    }
    if (m.edits) edits = m.edits;
    placed.set(id, { path: w.path !== b.path ? w.path : h.path, c: m.c, id: h.id, ...(w.path !== b.path ? { by: 'renamed' as const } : {}) });
  }
  if (same(head.get(RB)?.c, base.get(RB)?.c)) edits = wsEdits;
  const state: State = new Map();
  const byPath = new Map<string, [string, Placed][]>();
  for (const [id, p] of placed) byPath.set(p.path, [...(byPath.get(p.path) ?? []), [id, p]]);
  for (const [path, all] of byPath) {
    const [, first] = all[0]!;
    const clash = all.length > 1 && !(all.length === 2 && all.some(([, p]) => p.by === 'added') && same(all[0]![1].c, all[1]![1].c));
    if (clash) conflicts.add(path);
    state.set(path, { id: first.id, c: first.c });
  }
  return { state, edits, conflicts: [...conflicts].sort() };
}
