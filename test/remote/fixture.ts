/** Small Stores for the remote tests: a LayerStack imported from a tree, Branches with Commits. */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { seededBytes } from '../helpers/tmp.js';
import { walkForCompare, type WalkRecord } from '../helpers/treewalk.js';

/** A tree with small files, a chunked large file, a symlink and nested directories. */
export function writeTree(dir: string, files = 40): void {
  mkdirSync(join(dir, 'src', 'deep', 'er'), { recursive: true });
  for (let i = 0; i < files; i++) writeFileSync(join(dir, 'src', i % 3 ? 'deep' : '', `f${i}.txt`), `file ${i}\n`.repeat(50 + i));
  writeFileSync(join(dir, 'src', 'deep', 'er', 'big.bin'), seededBytes(7, 600_000));
  symlinkSync('deep/f1.txt', join(dir, 'src', 'link'));
}

/** Exports a state and walks it, for comparing two Stores' states. */
export function exported(client: Client, ref: string, at: string): WalkRecord[] {
  client.export(ref, at);
  return walkForCompare(at);
}

/** Commits `files` (path → content) on Branch `branch` through a materialized Workspace. */
export async function commitFiles(client: Client, branch: string, at: string, files: Record<string, string | Buffer>, note: { message?: string; metadata?: Record<string, unknown> } = {}): Promise<string> {
  const ws = await client.createWorkspace(branch, { at, projection: 'materialize' });
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(join(at, rel, '..'), { recursive: true });
    writeFileSync(join(at, rel), body);
  }
  const r = await client.commitWorkspace(ws.id, note);
  await client.endWorkspace(ws.id);
  if (r.outcome !== 'Created') throw new Error(`commit: ${r.outcome}`);
  return (r as { commit: { id: string } }).commit.id;
}
