/**
 * The edits of the status model test (status-model.test.ts): a seeded random edit chosen from a
 * plain directory's entries, and applying it to a root with a logical clock for the mtimes it
 * touched, so that the plain directory and a Workspace get the same edit and the same times.
 */
import fs from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { setTimes, setXattr } from '../../lib/native/index.js';
import { Rng } from '../helpers/random.js';

/** One stream per Projection, from the printed seed: the tests' one generator (helpers/random.ts). */
export function prng(seed: number): Pick {
  const r = new Rng(seed);
  return (n: number): number => r.below(n);
}

const NAMES = ['f', 'g', 'h', 'stdio.h', 'x.tmp', 'c', 'a', 'b'];
const MODES = [0o644, 0o600, 0o755, 0o640];

/** One edit: steps run in order on a root; an error stops the edit (same errno on both sides). */
export interface Op {
  text: string;
  run(root: string): void;
  /** Paths whose mtime (and their parents') the logical clock sets after the edit. */
  touched: string[];
}

export type Pick = (n: number) => number;

/** Entries of the plain directory, for choosing edits deterministically. */
function entries(root: string): { files: string[]; dirs: string[]; all: string[] } {
  const files: string[] = [];
  const dirs: string[] = [''];
  const visit = (rel: string) => {
    for (const d of fs.readdirSync(join(root, rel), { withFileTypes: true }).sort((x, y) => (x.name < y.name ? -1 : 1))) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) {
        dirs.push(r);
        visit(r);
      } else files.push(r);
    }
  };
  visit('');
  return { files, dirs, all: [...files, ...dirs.slice(1)] };
}

const anyPath = (rnd: Pick, dirs: string[]) => {
  const d = dirs[rnd(dirs.length)]!;
  const n = NAMES[rnd(NAMES.length)]!;
  return d ? `${d}/${n}` : n;
};

const text = (rnd: Pick, tag: string) => `${tag} ${'x'.repeat(rnd(40))}\n`.repeat(1 + rnd(3));

/** A random edit chosen from the plain directory's current entries. */
export function chooseOp(rnd: Pick, root: string, step: number): Op {
  const { files, dirs, all } = entries(root);
  const f = files.length ? files[rnd(files.length)]! : anyPath(rnd, dirs);
  const e = all.length ? all[rnd(all.length)]! : f;
  const p = anyPath(rnd, dirs);
  const q = anyPath(rnd, dirs);
  const body = text(rnd, `s${step}`);
  const at = (root_: string, r: string) => join(root_, r);
  switch (rnd(17)) {
    case 0:
      return { text: `write ${p}`, touched: [p], run: (r) => fs.writeFileSync(at(r, p), body) };
    case 1:
      return { text: `append ${f}`, touched: [f], run: (r) => fs.appendFileSync(at(r, f), body) };
    case 2: {
      const n = rnd(30);
      return { text: `truncate ${f} ${n}`, touched: [f], run: (r) => fs.truncateSync(at(r, f), n) };
    }
    case 3:
    case 4:
      return { text: `mv ${e} ${p}`, touched: [p, e], run: (r) => fs.renameSync(at(r, e), at(r, p)) };
    case 5: {
      const tmp = 'swap.tmp';
      return {
        text: `swap ${e} ${f}`,
        touched: [e, f],
        run: (r) => {
          fs.renameSync(at(r, e), at(r, tmp));
          fs.renameSync(at(r, f), at(r, e));
          fs.renameSync(at(r, tmp), at(r, f));
        },
      };
    }
    case 6:
      return { text: `ln ${f} ${p}`, touched: [p, f], run: (r) => fs.linkSync(at(r, f), at(r, p)) };
    case 7: {
      // Relative and descending: a write through a link never leaves the tree.
      const target = ['f', 'g', 'c/h', 'nowhere'][rnd(4)]!;
      return { text: `ln -s ${target} ${p}`, touched: [p], run: (r) => fs.symlinkSync(target, at(r, p)) };
    }
    case 8: {
      const m = MODES[rnd(MODES.length)]!;
      return { text: `chmod ${m.toString(8)} ${f}`, touched: [], run: (r) => fs.chmodSync(at(r, f), m) };
    }
    case 9:
      return { text: `touch ${e}`, touched: [e], run: () => undefined };
    case 10:
      return {
        text: `rm ${f}; write ${f}`,
        touched: [f],
        run: (r) => {
          fs.unlinkSync(at(r, f));
          fs.writeFileSync(at(r, f), body);
        },
      };
    case 11:
      return {
        text: `sed -i ${f}`,
        touched: [f],
        run: (r) => {
          const old = fs.readFileSync(at(r, f));
          const tmp = `${at(r, f)}.sedXXXX`;
          fs.writeFileSync(tmp, Buffer.concat([Buffer.from(`/* ${step} */\n`), old]));
          fs.chmodSync(tmp, fs.statSync(at(r, f)).mode & 0o7777);
          fs.renameSync(tmp, at(r, f));
        },
      };
    case 12:
      return { text: `cp ${f} ${q}`, touched: [q], run: (r) => fs.copyFileSync(at(r, f), at(r, q)) };
    case 13:
      return { text: `mkdir ${p}`, touched: [p], run: (r) => fs.mkdirSync(at(r, p)) };
    case 14:
      return { text: `rm -r ${e}`, touched: [e], run: (r) => fs.rmSync(at(r, e), { recursive: true }) };
    case 15:
      return { text: `rm ${f}`, touched: [f], run: (r) => fs.unlinkSync(at(r, f)) };
    default: {
      const v = `v${rnd(3)}`;
      return { text: `setfattr user.k=${v} ${f}`, touched: [], run: (r) => setXattr(at(r, f), 'user.k', v) };
    }
  }
}

/** Where each touched path that is a symlink leads now (followed by name, dangling or not), inside root. */
function linkTargets(root: string, touched: string[]): string[] {
  const out: string[] = [];
  for (const t of touched) {
    let p = join(root, t);
    try {
      for (let hops = 0; hops < 8 && fs.lstatSync(p).isSymbolicLink(); hops++) p = resolve(dirname(p), fs.readlinkSync(p));
    } catch {
      // dangling: p is where a write would create it
    }
    if (p !== join(root, t) && p.startsWith(`${root}/`)) out.push(p);
  }
  return out;
}

/**
 * The inodes of touched paths (links followed) that have other names: an edit may change such a
 * file and then lose the touched name (a `cp` of a directory over a hard-linked file truncates the
 * file, fails with EISDIR and unlinks the name it opened), so its other names get the clock too.
 */
function linkedInodes(root: string, touched: string[]): Set<number> {
  const out = new Set<number>();
  for (const t of touched) {
    try {
      const st = fs.statSync(join(root, t));
      if (st.isFile() && st.nlink > 1) out.add(st.ino);
    } catch {
      // absent, dangling or a loop
    }
  }
  return out;
}

/** Every name under root (symlinks not followed) of a regular file whose inode is in `inodes`. */
function namesOf(root: string, inodes: Set<number>): string[] {
  const out: string[] = [];
  const visit = (dir: string) => {
    for (const d of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, d.name);
      if (d.isDirectory()) visit(p);
      else if (d.isFile() && inodes.has(fs.lstatSync(p).ino)) out.push(p);
    }
  };
  visit(root);
  return out;
}

/** Runs an edit, then sets the mtime of what it touched (and their parents) from a logical clock. */
export function apply(root: string, op: Op, clockNs: bigint): string {
  const through = linkTargets(root, op.touched);
  const linked = linkedInodes(root, op.touched);
  let code = 'ok';
  try {
    op.run(root);
  } catch (e) {
    code = (e as NodeJS.ErrnoException).code ?? String(e);
  }
  // A failed edit may still have created a symlink's target and then removed the link (`cp` of a
  // directory over a dangling link): the target gets the clock too.
  for (const real of through) {
    try {
      fs.lstatSync(real);
      setTimes(real, clockNs, clockNs);
      setTimes(join(real, '..'), clockNs, clockNs);
    } catch {
      // not created
    }
  }
  // The other names of a hard-linked file the edit reached: set before the touched paths, which
  // may be names of the same inode and then get the clock (and their parents) as before.
  if (linked.size > 0) for (const name of namesOf(root, linked)) setTimes(name, clockNs, clockNs);
  const stamp = new Set<string>();
  for (const t of op.touched) {
    stamp.add(t);
    const cut = t.lastIndexOf('/');
    if (cut > 0) stamp.add(t.slice(0, cut));
  }
  for (const t of [...stamp].sort()) {
    try {
      // A write through a symlink changed its target: that gets the clock too.
      const real = fs.realpathSync(join(root, t));
      if (real !== join(root, t)) {
        setTimes(real, clockNs, clockNs);
        // It may have been created by the write (a dangling link): its directory changed too.
        setTimes(join(real, '..'), clockNs, clockNs);
      }
    } catch {
      // dangling, a loop, or gone
    }
    try {
      setTimes(join(root, t), clockNs, clockNs);
    } catch (e) {
      // What the edit left behind may not exist (rm, mv); that answer must match the other side.
      code += ` touch ${t}: ${String((e as { details?: { errno?: string } }).details?.errno ?? (e as Error).message)}`;
    }
  }
  return code;
}
