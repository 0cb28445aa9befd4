// Readers and a writer on one Store at the same time.
//   write STORE WS COUNT        commits COUNT states through the Workspace at WS; state n has
//                               every file carrying n (see files()), and every 10th is Added.
//   read STORE STOPFILE OUTDIR  until STOPFILE exists (then one last pass): reads Branch
//                               history, Layers, ls/cat, diff and export of the states it
//                               finds, and checks each is one complete state n. Prints a JSON
//                               summary: states checked, diffs, exports, errors.
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { files, writeState } from './readers-states.js';

const DIRS = new Set(['', 'dir', 'dir/sub']);

/** Checks that `read` shows exactly the files of one state n; returns n. */
function checkState(list: (dir: string) => { name: string; kind: string }[], read: (path: string) => Buffer, what: string): number {
  const seen = new Map<string, Buffer>();
  const walk = (dir: string) => {
    for (const e of list(dir)) {
      const p = dir ? `${dir}/${e.name}` : e.name;
      if (e.kind === 'dir') {
        if (!DIRS.has(p)) throw new Error(`${what}: unexpected directory ${p}`);
        walk(p);
      } else if (e.kind === 'file') seen.set(p, read(p));
      else throw new Error(`${what}: unexpected ${e.kind} ${p}`);
    }
  };
  walk('');
  const n = Number(seen.get('seq')?.toString());
  if (!Number.isInteger(n)) throw new Error(`${what}: no seq file`);
  const want = files(n);
  const names = (m: Map<string, Buffer>) => [...m.keys()].sort().join(',');
  if (names(seen) !== names(want)) throw new Error(`${what}: state ${n} has files ${names(seen)}, expected ${names(want)}`);
  for (const [p, b] of want) if (!seen.get(p)!.equals(b)) throw new Error(`${what}: ${p} is not the bytes of state ${n}`);
  return n;
}

const [mode, store, arg, third] = process.argv.slice(2) as [string, string, string, string];

if (mode === 'write') {
  const c = Client.connect(store);
  const ws = c.workspaces()[0]!;
  const count = Number(third);
  for (let n = 1; n <= count; n++) {
    writeState(ws.path, n);
    const r = await c.commitWorkspace(ws.id);
    if (r.outcome !== 'Created') throw new Error(`commit ${n}: ${r.outcome}`);
    if (n % 10 === 0 && c.add(ws.branch).outcome !== 'Added') throw new Error(`add ${n}`);
  }
  c.close();
} else {
  const stopFile = arg;
  const outDir = third;
  const c = Client.connect(store, { readonly: process.pid % 2 === 0 });
  const errors: string[] = [];
  let checked = 0;
  let diffs = 0;
  let exports = 0;
  const seqOf = new Map<string, number>();
  const check = (ref: string, via: 'cat' | 'export'): number => {
    let n: number;
    if (via === 'cat') {
      n = checkState(
        (d) => c.ls(ref, d || undefined),
        (p) => c.cat(ref, p),
        `state ${ref}`,
      );
    } else {
      const out = join(outDir, `x${exports++}`);
      c.export(ref, out);
      n = checkState(
        (d) => readdirSync(join(out, d), { withFileTypes: true }).map((e) => ({ name: e.name, kind: e.isDirectory() ? 'dir' : e.isFile() ? 'file' : 'other' })),
        (p) => readFileSync(join(out, p)),
        `export of ${ref}`,
      );
      rmSync(out, { recursive: true, force: true });
    }
    checked++;
    const known = seqOf.get(ref);
    if (known !== undefined && known !== n) throw new Error(`${ref} was state ${known}, now ${n}`);
    seqOf.set(ref, n);
    return n;
  };
  /** The diff of consecutive states touches exactly what the writer changed. */
  const checkDiff = (from: string, to: string, nFrom: number) => {
    const changed = new Set<string>();
    let after: string | undefined;
    do {
      const page = c.diff(from, to, { limit: 3, ...(after ? { after } : {}) });
      for (const e of page.entries) changed.add(e.path);
      after = page.next;
    } while (after);
    const files = [...changed].filter((p) => !DIRS.has(p)).sort();
    // Every file but static.txt differs between n and n + 1; gone comes and goes.
    const want = ['a.txt', 'big.bin', 'dir/b.txt', 'dir/sub/c.txt', 'gone', 'seq'];
    if (files.join(',') !== want.join(',')) throw new Error(`diff ${nFrom}→${nFrom + 1}: ${files.join(',')}`);
    diffs++;
  };
  let pass = 0;
  for (;;) {
    // The stop file, or its directory gone (the test ended without us): one last pass.
    const last = existsSync(stopFile) || !existsSync(dirname(stopFile));
    try {
      const log = c.log('main'); // newest first
      // Every pass: the head, a rotating older Commit, each Layer; diffs along the way.
      const picks = new Set<string>();
      if (log[0]) picks.add(log[0].id);
      if (log.length > 1) picks.add(log[pass % log.length]!.id);
      if (last) for (const x of log) picks.add(x.id);
      for (const id of picks) {
        const n = check(id, 'cat');
        const commit = log.find((x) => x.id === id)!;
        const parent = commit.parentCommitId ?? commit.baseLayerId;
        const pn = check(parent, 'cat');
        if (pn !== n - 1) throw new Error(`Commit ${id} is state ${n} but its parent is state ${pn}`);
        checkDiff(parent, id, pn);
      }
      for (const l of c.layers({ layerStack: 'p' })) if (last || pass % 3 === 0) check(l.id, 'cat');
      if (log[0] && (last || pass % 4 === 0)) check(log[0].id, 'export');
      if (last) for (const l of c.layers({ layerStack: 'p' })) check(l.id, 'export');
    } catch (e) {
      errors.push(`${(e as { code?: string }).code ?? 'untyped'}: ${(e as Error).message}`);
    }
    pass++;
    if (last) break;
  }
  process.stdout.write(JSON.stringify({ checked, diffs, exports, passes: pass, distinct: seqOf.size, errors }) + '\n');
  c.close();
}
