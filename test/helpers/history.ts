/** Histories of random Commits for round-trip tests, and a git runner with a fixed identity. */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { randomEdits, rng } from './edits.js';
import { tempDir } from './tmp.js';

export function git(cwd: string, args: string[], input?: Buffer): string {
  const r = spawnSync('git', args, { cwd, input, encoding: 'buffer', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' } });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

/** A Store with a LayerStack and a Branch of `commits` random Commits; returns the states in order. */
export async function randomHistory(seed: number, commits: number, steps = 12) {
  const dir = tempDir();
  const r = rng(seed);
  const src = join(dir, 'src');
  mkdirSync(src);
  randomEdits(src, r, 25);
  const store = join(dir, 'store.sqlite');
  const client = Client.create(store);
  const init = await client.initLayerStack({ name: 'proj', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  const ws = await client.createWorkspace('main', { at: join(dir, 'ws'), projection: 'materialize' });
  const states = [init.layer.id];
  const logs: string[][] = [];
  for (let i = 0; i < commits; i++) {
    logs.push(randomEdits(ws.path, r, steps));
    const c = await client.commitWorkspace(ws.id, { message: `change ${i}\n\nbody of change ${i}\n`, author: 'Ann Example <ann@example.com>' });
    if (c.outcome === 'Created') states.push(c.commit.id);
  }
  return { dir, store, client, ws, states, logs };
}

