/**
 * What the tests of gc against other writers share: a small Store to make garbage in, a Branch
 * committed through a Workspace, and a gc in another process held between two of its
 * transactions (test/store/gc-pause-worker.ts).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const worker = fileURLToPath(new URL('../store/gc-pause-worker.ts', import.meta.url));

/** A Store at DIR/s.sqlite whose LayerStack `demo` holds one small file: its path, a Client, the genesis Layer's id. */
export async function demoStore(dir: string): Promise<{ path: string; c: Client; layer: string }> {
  const path = join(dir, 's.sqlite');
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'base\n');
  const c = Client.create(path);
  const init = await c.initLayerStack({ name: 'demo', source: src });
  return { path, c, layer: init.layer.id };
}

/** Forks `branch` from `layer` and commits each of `versions` (files by name) through a Workspace at DIR/ws-BRANCH. */
export async function commitVersions(c: Client, dir: string, branch: string, layer: string, versions: Record<string, Buffer>[]): Promise<void> {
  c.forkBranch({ name: branch, layer });
  const ws = join(dir, `ws-${branch}`);
  await c.createWorkspace(branch, { at: ws });
  for (const files of versions) {
    for (const [name, data] of Object.entries(files)) writeFileSync(join(ws, name), data);
    assert.equal((await c.commitWorkspace(ws)).outcome, 'Created');
  }
  await c.endWorkspace(ws);
}

/**
 * `db gc` of `path` in another process, one object per transaction, held (no write lock) after
 * its first sweep transaction that deleted one of `watched` (hex ids; none: as its sweep starts)
 * until `resume`.
 */
export async function pausedGc(path: string, dir: string, watched: Buffer[] = []): Promise<{ child: ChildProcess; exited: Promise<number | null>; resume: () => void }> {
  const flag = join(dir, 'resume');
  const ids = watched.length > 0 ? watched.map((b) => b.toString('hex')).join(',') : '-';
  const child = spawn(process.execPath, nodeArgs(worker, path, ids, flag), { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  await new Promise<void>((res, rej) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('paused\n')) res();
    });
    void exited.then((code) => rej(new Error(`gc ended before pausing (${code}): ${out}${err}`)));
  });
  return { child, exited, resume: () => writeFileSync(flag, '') };
}
