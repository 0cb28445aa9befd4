/**
 * The oracle of the status model test: every path's state as one comparable string (kinds,
 * modes, mtimes, bytes, targets, link counts, xattrs), the paths that differ between two such
 * snapshots, and the judgement of a reported change list (status or a Commit's diff) against them.
 */
import fs from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { getXattrs } from '../../lib/native/index.js';


/** One walk of a tree: each path's state, the same with hard-link groups, and each path's ctime. */
export interface Observed {
  /** Per path (the root left out): everything a state holds, as one comparable string. */
  state: Map<string, string>;
  /** The same, naming for each hard-linked path the first path of its inode (tree equality). */
  grouped: Map<string, string>;
  /** Status is stat-based, so a change of ctime alone may show until a commit. */
  ctimes: Map<string, bigint>;
}

export function observe(root: string): Observed {
  const o: Observed = { state: new Map(), grouped: new Map(), ctimes: new Map() };
  const first = new Map<string, string>();
  const visit = (rel: string) => {
    for (const name of fs.readdirSync(join(root, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const abs = join(root, r);
      const st = fs.lstatSync(abs, { bigint: true });
      const kind = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : 'other';
      const parts = [kind, st.mtimeNs.toString()];
      if (kind !== 'symlink') parts.push((st.mode & 0o7777n).toString(8), getXattrs(abs).map((x) => `${x.name}=${x.value.toString('hex')}`).sort().join(','));
      if (kind === 'symlink') parts.push(fs.readlinkSync(abs));
      if (kind === 'file') parts.push(createHash('sha256').update(fs.readFileSync(abs)).digest('hex'));
      let group = '';
      if (kind !== 'dir') {
        parts.push(`nlink=${st.nlink}`);
        const key = st.ino.toString();
        if (!first.has(key)) first.set(key, r);
        if (st.nlink > 1n) group = `|group=${first.get(key)}`;
      }
      const v = parts.join('|');
      o.state.set(r, v);
      o.grouped.set(r, v + group);
      o.ctimes.set(r, st.ctimeNs);
      if (kind === 'dir') visit(r);
    }
  };
  visit('');
  return o;
}

export function snapshot(root: string, withGroups = false): Map<string, string> {
  const o = observe(root);
  return withGroups ? o.grouped : o.state;
}

/**
 * Paths whose state differs between two snapshots. A directory whose mtime alone changed is not
 * listed (its entries are), as a diff defines a change (lib/history/diff-fields.ts);
 * `strict` compares everything, for equality of two trees.
 */
export function differing(a: Map<string, string>, b: Map<string, string>, strict = false): Set<string> {
  const out = new Set<string>();
  const dirMtimeOnly = (x: string, y: string) => x.startsWith('dir|') && y.startsWith('dir|') && x.split('|').slice(2).join('|') === y.split('|').slice(2).join('|');
  for (const [k, v] of a) {
    const w = b.get(k);
    if (w !== v && (strict || w === undefined || !dirMtimeOnly(v, w))) out.add(k);
  }
  for (const k of b.keys()) if (!a.has(k)) out.add(k);
  return out;
}

/** Paths whose content, kind, exec bit or link target differs: what git sees. */
export function contentDiffering(a: Map<string, string>, b: Map<string, string>): Set<string> {
  const gitView = (v: string | undefined) => {
    if (!v) return undefined;
    const [kind, , mode, , hash] = v.split('|');
    if (kind === 'dir') return undefined;
    return kind === 'symlink' ? `l|${v.split('|')[2]}` : `f|${hash}|${parseInt(mode!, 8) & 0o100 ? 'x' : '-'}`;
  };
  const out = new Set<string>();
  for (const k of new Set([...a.keys(), ...b.keys()])) if (gitView(a.get(k)) !== gitView(b.get(k))) out.add(k);
  return out;
}

export interface Reported {
  change: string;
  path: string;
  oldPath?: string;
  kind: string;
}

/** Checks one report (status or diff) against the oracle; returns failures as text. */
export function judge(what: string, got: Reported[], want: Set<string>, after: Map<string, string>, mayShow = new Set<string>()): string[] {
  const bad: string[] = [];
  const paths = new Set<string>();
  for (const c of got) {
    paths.add(c.path);
    if (c.oldPath !== undefined) {
      paths.add(c.oldPath);
      if (after.has(c.oldPath)) bad.push(`${what}: renamed from ${c.oldPath}, which still exists`);
    }
    if (!['added', 'deleted', 'modified', 'renamed'].includes(c.change) || !c.kind) bad.push(`${what}: bad entry ${JSON.stringify(c)}`);
    if (c.change === 'added' && !after.has(c.path)) bad.push(`${what}: added ${c.path}, which does not exist`);
    if (c.change === 'deleted' && after.has(c.path)) bad.push(`${what}: deleted ${c.path}, which exists`);
  }
  const seen = new Map<string, number>();
  for (const c of got) seen.set(c.path, (seen.get(c.path) ?? 0) + 1);
  for (const [p, n] of seen) if (n > 1) bad.push(`${what}: ${p} reported ${n} times`);
  for (const p of want) if (!paths.has(p)) bad.push(`${what}: missing ${p}`);
  // A directory moved over an empty one of the same mode: its path's state is the same, and the
  // rename (its source disappeared) is true.
  const overEmpty = new Set(got.filter((c) => c.change === 'renamed' && c.kind === 'dir' && want.has(c.oldPath!)).map((c) => c.path));
  for (const p of paths) if (!want.has(p) && !mayShow.has(p) && !overEmpty.has(p)) bad.push(`${what}: extra ${p}`);
  return bad;
}

export function gitDiffNames(git: (...a: string[]) => string): Set<string> {
  git('add', '-A');
  git('commit', '-q', '--allow-empty', '-m', 'x');
  const out = git('diff', '--name-status', '--no-renames', 'HEAD~1', 'HEAD');
  return new Set(out.split('\n').filter(Boolean).map((l) => l.split('\t')[1]!));
}
