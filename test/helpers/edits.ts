/**
 * Random edit scripts for round-trip tests: seeded (print the seed) mutations of a directory
 * — text and binary files, edits, deletions, renames of files and directories, exec bits,
 * symlinks, kind changes, names with spaces, quotes and non-ASCII — and a comparison of two
 * trees as git sees them (files, symlinks, exec bits, bytes).
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export { rng } from './random.js';

/** Whether anything (a dangling symlink too) is at the path. */
function lexists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

const NAMES = ['a.txt', 'b.md', 'c', 'with space.txt', 'quote"d', 'naïve.txt', 'tab\tname', 'data.bin', 'x.sh', 'long-' + 'n'.repeat(120)];
const DIRS = ['', 'src', 'src/deep', 'docs', 'd ir'];

/** Every file and symlink under `root` (not following links, skipping .git). */
export function listTree(root: string, rel = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, rel)).sort()) {
    if (rel === '' && name === '.git') continue;
    const p = rel ? `${rel}/${name}` : name;
    const st = lstatSync(join(root, p));
    if (st.isDirectory()) out.push(...listTree(root, p));
    else out.push(p);
  }
  return out;
}

function textLines(r: () => number, n: number): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) lines.push(`line ${Math.floor(r() * 50)} ${'w'.repeat(Math.floor(r() * 8))}`);
  return lines.join('\n') + (r() < 0.8 ? '\n' : '');
}

function binary(r: () => number, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(r() * 256);
  b[Math.floor(r() * Math.min(n, 100))] = 0;
  return b;
}

/** Applies `steps` random edits to the directory; returns what it did (for failure messages). */
export function randomEdits(root: string, r: () => number, steps: number): string[] {
  const log: string[] = [];
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  for (let s = 0; s < steps; s++) {
    const files = listTree(root);
    const op = Math.floor(r() * 10);
    const target = files.length ? pick(files) : undefined;
    const fresh = join(pick(DIRS), pick(NAMES) + (r() < 0.5 ? String(Math.floor(r() * 9)) : ''));
    const abs = join(root, fresh);
    if (op <= 1 && !lexists(abs)) {
      mkdirSync(dirname(abs), { recursive: true });
      writeFileSync(abs, fresh.includes('bin') ? binary(r, 50 + Math.floor(r() * 3000)) : textLines(r, Math.floor(r() * 40)));
      log.push(`create ${fresh}`);
    } else if (op <= 4 && target && !lstatSync(join(root, target)).isSymbolicLink()) {
      const p = join(root, target);
      const old = readFileSync(p);
      if (old.includes(0)) writeFileSync(p, Buffer.concat([old.subarray(0, Math.floor(r() * old.length)), binary(r, 20)]));
      else {
        const lines = old.toString('latin1').split('\n');
        for (let k = 0; k < 3; k++) lines.splice(Math.floor(r() * lines.length), Math.floor(r() * 2), ...(r() < 0.6 ? [`edit ${Math.floor(r() * 1000)}`] : []));
        writeFileSync(p, Buffer.from(lines.join('\n'), 'latin1'));
      }
      log.push(`edit ${target}`);
    } else if (op === 5 && target) {
      rmSync(join(root, target));
      log.push(`delete ${target}`);
    } else if (op === 6 && target && !lexists(abs)) {
      mkdirSync(dirname(abs), { recursive: true });
      renameSync(join(root, target), abs);
      log.push(`rename ${target} -> ${fresh}`);
    } else if (op === 7 && target && !lstatSync(join(root, target)).isSymbolicLink()) {
      const p = join(root, target);
      chmodSync(p, lstatSync(p).mode & 0o100 ? 0o644 : 0o755);
      log.push(`chmod ${target}`);
    } else if (op === 8 && !lexists(abs)) {
      mkdirSync(dirname(abs), { recursive: true });
      symlinkSync(target ?? 'nowhere', abs);
      log.push(`symlink ${fresh} -> ${target}`);
    } else if (op === 9 && target) {
      const p = join(root, target);
      const wasLink = lstatSync(p).isSymbolicLink();
      rmSync(p);
      if (wasLink) writeFileSync(p, textLines(r, 3));
      else symlinkSync('../elsewhere', p);
      log.push(`retype ${target}`);
    } else if (op === 6 && r() < 0.3) {
      const dirs = DIRS.filter((d) => d && lexists(join(root, d)));
      if (dirs.length && !lexists(join(root, 'moved'))) {
        const d = pick(dirs);
        renameSync(join(root, d), join(root, 'moved'));
        log.push(`rename dir ${d} -> moved`);
      }
    }
  }
  return log;
}

/** Files and symlinks of a tree as git sees them: kind, exec bit and bytes, by path. */
export function gitView(root: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const p of listTree(root)) {
    const abs = join(root, p);
    const st = lstatSync(abs);
    if (st.isSymbolicLink()) m.set(p, `link:${readlinkSync(abs)}`);
    else if (st.isFile()) m.set(p, `${st.mode & 0o100 ? 'x' : '-'}:${readFileSync(abs).toString('base64')}`);
  }
  return m;
}

/** gitView plus exact permission bits of files and directories, and empty directories. */
export function fullView(root: string, rel = ''): Map<string, string> {
  const m = new Map<string, string>();
  for (const name of readdirSync(join(root, rel)).sort()) {
    if (rel === '' && name === '.git') continue;
    const p = rel ? `${rel}/${name}` : name;
    const abs = join(root, p);
    const st = lstatSync(abs);
    if (st.isSymbolicLink()) m.set(p, `link:${readlinkSync(abs)}`);
    else if (st.isDirectory()) {
      m.set(p, `dir:${(st.mode & 0o7777).toString(8)}`);
      for (const [k, v] of fullView(root, p)) m.set(k, v);
    } else m.set(p, `${(st.mode & 0o7777).toString(8)}:${readFileSync(abs).toString('base64')}`);
  }
  return m;
}
