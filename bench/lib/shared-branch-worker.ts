// Worker of the shared_branch family: one process committing --commits times to one Branch
// (layerfs: its own Workspace; git: its own clone pushing to one bare repository). Each commit
// writes one file of its own; --share of them also edit one line of the shared file (a line of
// the worker's own, so edits never overlap, or line 1 for everyone with --overlap). It starts at
// --start (epoch ms) so all workers begin together, and prints one JSON line.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '../../lib/sdk/index.js';
import { rng } from '../../test/helpers/random.js';

const a = parseArgs({
  options: {
    tool: { type: 'string' }, store: { type: 'string' }, ws: { type: 'string' }, path: { type: 'string' },
    id: { type: 'string' }, commits: { type: 'string' }, share: { type: 'string', default: '0.1' },
    overlap: { type: 'boolean', default: false }, start: { type: 'string' },
  },
}).values;
const id = Number(a.id);
const commits = Number(a.commits);
const dir = a.path!;
const rand = rng(id + 1);

/** Line (0-based) this commit edits in the shared file, or -1. */
function sharedLine(i: number): number {
  if (rand() >= Number(a.share)) return -1;
  return a.overlap ? 0 : id * 60 + 1 + (i % 29) * 2;
}

function editShared(line: number, text: string): void {
  const p = join(dir, 'shared.txt');
  const lines = readFileSync(p, 'utf8').split('\n');
  lines[line] = text;
  writeFileSync(p, lines.join('\n'));
}

const out = { created: 0, headMoved: 0, conflicted: 0, retries: 0, commitMs: [] as number[], shared: [] as { commit: string; line: number; text: string }[], errors: [] as string[] };
const wait = Number(a.start) - Date.now();
if (wait > 0) await new Promise((r) => setTimeout(r, wait));
const t0 = performance.now();

if (a.tool === 'layerfs') {
  const c = Client.connect(a.store!);
  for (let i = 0; i < commits; i++) {
    mkdirSync(join(dir, 'own'), { recursive: true });
    writeFileSync(join(dir, 'own', `w${id}-${i % 10}.txt`), `worker ${id} commit ${i}\n`);
    const line = sharedLine(i);
    const text = `shared line ${line} by worker ${id} commit ${i}`;
    if (line >= 0) editShared(line, text);
    for (;;) {
      const t = performance.now();
      const r = await c.commitWorkspace(a.ws!, { message: `w${id} c${i}` });
      out.commitMs.push(performance.now() - t);
      if (r.outcome === 'Created') {
        out.created++;
        if (line >= 0 && readFileSync(join(dir, 'shared.txt'), 'utf8').split('\n')[line] === text) out.shared.push({ commit: r.commit.id, line, text });
        break;
      }
      if (r.outcome === 'Conflicted') {
        // Reported, not lost: take the head's version of what overlapped, keep the rest.
        out.conflicted++;
        for (const k of r.conflicts) c.resolveWorkspaceConflict(a.ws!, k.id, 'branch');
        out.retries++;
        continue;
      }
      if (r.outcome === 'HeadMoved') out.headMoved++;
      else out.errors.push(`unexpected ${r.outcome}`);
      break;
    }
  }
  c.close();
} else {
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'b@x', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'b@x', GIT_EDITOR: 'true' };
  const git = (...args: string[]) => spawnSync('git', ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false', ...args], { cwd: dir, env, encoding: 'utf8' });
  for (let i = 0; i < commits; i++) {
    mkdirSync(join(dir, 'own'), { recursive: true });
    writeFileSync(join(dir, 'own', `w${id}-${i % 10}.txt`), `worker ${id} commit ${i}\n`);
    const line = sharedLine(i);
    const text = `shared line ${line} by worker ${id} commit ${i}`;
    if (line >= 0) editShared(line, text);
    const t = performance.now();
    git('add', '-A');
    git('commit', '-q', '-m', `w${id} c${i}`);
    for (;;) {
      if (git('push', '-q', 'origin', 'HEAD:main').status === 0) break;
      out.retries++;
      if (git('pull', '-q', '--rebase', 'origin', 'main').status !== 0) {
        // The same line on both sides: take upstream's (during a rebase, "ours" is upstream).
        out.conflicted++;
        git('checkout', '--ours', 'shared.txt');
        git('add', 'shared.txt');
        git('rebase', '--continue');
      }
    }
    out.commitMs.push(performance.now() - t);
    out.created++;
    const head = git('rev-parse', 'HEAD').stdout.trim();
    if (line >= 0 && readFileSync(join(dir, 'shared.txt'), 'utf8').split('\n')[line] === text) out.shared.push({ commit: head, line, text });
  }
}
process.stdout.write(JSON.stringify({ ...out, ms: performance.now() - t0 }) + '\n');
