// Helpers for FUSE tests. Every mount is served by a daemon child process; this process only
// uses async fs calls or spawns programs against a mount, and always unmounts in `finally`.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { mountWorkspace, stopDaemon, unmountWorkspace, type Backend } from '../../lib/fuse/index.js';
import { FsError } from '../../lib/fuse/errno.js';
import { tempDir } from '../helpers/tmp.js';

/** The errno an overlay call fails with (FsError), 0 when it succeeds. */
export function errnoOf(fn: () => unknown): number {
  try {
    fn();
  } catch (e) {
    if (e instanceof FsError) return e.errno;
    throw e;
  }
  return 0;
}

export interface StoreSetup {
  dir: string;
  src: string;
  storePath: string;
  client: Client;
  layer: string;
}

/** A Store with one LayerStack imported from `fill(src)` and a Branch `main` forked from it. */
export async function setupStore(fill: (src: string) => void, prefix = 'layerfs-mount-'): Promise<StoreSetup> {
  const dir = tempDir(prefix);
  const src = join(dir, 'src');
  mkdirSync(src);
  fill(src);
  const storePath = join(dir, 'store.sqlite');
  const client = Client.create(storePath);
  const init = await client.initLayerStack({ name: 'proj', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  return { dir, src, storePath, client, layer: init.layer.id };
}

export interface Mounted {
  path: string;
  workspaceId: string;
  daemonPid: number;
  backend: Backend;
}

/** Mounts the current state of `branch` at a fresh directory under s.dir. */
export async function mountBranch(s: StoreSetup, opts: { branch?: string; name?: string; backend?: Backend; allowOther?: boolean } = {}): Promise<Mounted> {
  const b = s.client.branch(opts.branch ?? 'main');
  const path = join(s.dir, opts.name ?? `mnt-${randomBytes(3).toString('hex')}`);
  mkdirSync(path);
  const workspaceId = randomBytes(16).toString('hex');
  const req = { workspaceId, branchId: b.id, path, expectedHead: b.headCommitId, expectedBase: b.baseLayerId, rootId: b.rootId };
  const r = await mountWorkspace(s.storePath, { ...req, ...(opts.backend ? { backend: opts.backend } : {}), ...(opts.allowOther !== undefined ? { allowOther: opts.allowOther } : {}) });
  return { path, workspaceId, daemonPid: r.daemonPid, backend: r.backend };
}

/** Runs fn with a mounted Branch; always unmounts (discarding) and stops the daemon. */
export async function withMount<T>(s: StoreSetup, fn: (m: Mounted) => Promise<T>, opts: { branch?: string; backend?: Backend; allowOther?: boolean } = {}): Promise<T> {
  const m = await mountBranch(s, opts);
  try {
    return await fn(m);
  } finally {
    await unmountWorkspace(s.storePath, m.workspaceId, { discard: true }).catch(() => {});
    await stopDaemon(s.storePath, { discard: true }).catch(() => {});
  }
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

/** Runs and fails with the program's output when it exits non-zero. */
export async function ok(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<string> {
  const r = await run(cmd, args, opts);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

export interface TreeRecord {
  path: string;
  kind: string;
  mode: number;
  size: number;
  sha256?: string;
  target?: string;
  /** First path of the hard-link group (files with nlink > 1). */
  linkGroup?: string;
}

/** An async tree walk: kinds, bytes, modes, symlink targets and hard-link groups. */
export async function walk(root: string, opts: { skip?: (rel: string) => boolean } = {}): Promise<TreeRecord[]> {
  const out: TreeRecord[] = [];
  const groups = new Map<string, string>();
  const visit = async (rel: string): Promise<void> => {
    const abs = rel ? join(root, rel) : root;
    const st = await lstat(abs, { bigint: true });
    const kind = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : st.isFIFO() ? 'fifo' : 'other';
    const r: TreeRecord = { path: rel, kind, mode: kind === 'symlink' ? 0 : Number(st.mode & 0o7777n), size: kind === 'dir' ? 0 : Number(st.size) };
    if (kind === 'file') {
      r.sha256 = createHash('sha256').update(await readFile(abs)).digest('hex');
      if (st.nlink > 1n) {
        const k = `${st.dev}:${st.ino}`;
        if (!groups.has(k)) groups.set(k, rel);
        r.linkGroup = groups.get(k)!;
      }
    }
    if (kind === 'symlink') r.target = await readlink(abs);
    out.push(r);
    if (kind === 'dir') {
      const names = (await readdir(abs)).sort();
      for (const n of names) {
        const child = rel ? `${rel}/${n}` : n;
        if (opts.skip?.(child)) continue;
        await visit(child);
      }
    }
  };
  await visit('');
  return out;
}
