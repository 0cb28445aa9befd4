// The README's commands, run as written (read from README.md), so README and behaviour cannot
// drift apart. `npx layerfs` runs the CLI from sources, as the compiled one would run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliArgv, repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { assertStoreIntact } from '../helpers/integrity.js';

const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');

/** The first ```sh block after `heading` (or the first of the file). */
function shBlock(heading?: string): string {
  const from = heading === undefined ? 0 : readme.indexOf(heading);
  assert.ok(from >= 0, `README.md has no ${heading}`);
  const m = /```sh\n([\s\S]*?)```/.exec(readme.slice(from));
  assert.ok(m, `no sh block after ${heading}`);
  return m[1]!;
}

/** Runs a script with `npx layerfs` bound to the sources; -x so a failure shows the command. */
function runScript(script: string, cwd: string): { code: number; out: string } {
  const argv = cliArgv([]).map((a) => `'${a}'`).join(' ');
  const prelude = `set -euo pipefail\nnpx() { if [ "$1" = layerfs ]; then shift; ${JSON.stringify(process.execPath)} ${argv} "$@"; else command npx "$@"; fi; }\nset -x\n`;
  const env = { ...process.env, LAYERFS_CONTEXT: join(cwd, 'context.json'), LAYERFS_STORE: '' };
  const r = spawnSync('bash', ['-c', prelude + script], { cwd, env, encoding: 'utf8', timeout: 600_000 });
  return { code: r.status ?? -1, out: `${r.stdout}\n${r.stderr}` };
}

test("the README's first command runs the tour (its set-up part is what CI runs)", () => {
  const first = shBlock();
  const line = first.split('\n')[0]!;
  assert.match(line, /^bash scripts\/setup\.sh && npx layerfs tour\b/);
  const dir = tempDir();
  const t0 = performance.now();
  const r = runScript(line.replace(/^bash scripts\/setup\.sh && /, '').replace(/#.*$/, ''), dir);
  const s = (performance.now() - t0) / 1000;
  assert.equal(r.code, 0, r.out);
  for (const word of ['Store', 'LayerStack', 'Layer #0', 'Branch', 'Workspace', 'Commit', 'Diff', 'Log', 'Add']) assert.ok(r.out.includes(word), `${word} in ${r.out}`);
  assert.match(r.out, /A {2}TOUR\.md/);
  assert.ok(existsSync(join(dir, '.layerfs/store.sqlite')));
  // Its speed is the bench's business (speed is never asserted by a timed test); printed for the log.
  console.log(`# tour: ${s.toFixed(2)} s`);
  // A second tour reuses the Store and picks fresh names.
  const again = runScript('npx layerfs tour', dir);
  assert.equal(again.code, 0, again.out);
  assert.match(again.out, /reused/);
  assert.match(again.out, /LayerStack {2}tour-2/);
  assertStoreIntact(join(dir, '.layerfs/store.sqlite'));
});

test("the README's short tour, as written", () => {
  const dir = tempDir();
  const r = runScript(shBlock('## A short tour'), dir);
  assert.equal(r.code, 0, r.out);
  const project = join(dir, 'my-project');
  assert.equal(readFileSync(join(project, 'restored/src/index.ts'), 'utf8'), 'export const x = 1;\nexport const y = 2;\n');
  assert.ok(!existsSync(join(project, 'restored/.layerfs')), 'the Store directory was imported');
  assert.ok(!existsSync(join(project, 'try')), 'the Workspace was not removed');
  assert.match(r.out, /demo#0/);
  assert.match(r.out, /^ok: /m);
  assertStoreIntact(join(project, '.layerfs/store.sqlite'));
});
