// Every command of the help tree has an example in docs/CLI.md: a line of a code block that runs
// it (`layerfs GROUP SUB …`). The tree comes from the CLI itself, so a new command without an
// example fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../../lib/cli/main.js';
import { repoRoot } from '../helpers/cli.js';

/** The runnable commands: leaves of the tree, by their words after `layerfs`. */
function leaves(cmd: Command, path: string[] = []): string[][] {
  const subs = cmd.commands.filter((c) => c.name() !== 'help');
  if (subs.length === 0) return [path];
  return subs.flatMap((c) => leaves(c, [...path, c.name()]));
}

/** The lines inside ``` blocks. */
function codeLines(markdown: string): string[] {
  const lines: string[] = [];
  let inside = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inside = !inside;
    else if (inside) lines.push(line);
  }
  return lines;
}

test('docs/CLI.md has an example for every command in the help tree', () => {
  const commands = leaves(buildProgram({ code: 0 }));
  assert.ok(commands.length > 50, `the help tree has ${commands.length} commands`);
  const examples = codeLines(readFileSync(join(repoRoot, 'docs/CLI.md'), 'utf8'));
  const missing = commands.filter((words) => {
    const call = new RegExp(`\\blayerfs(?: --?[\\w-]+(?: [^\\s-]\\S*)?)* ${words.map((w) => w.replace(/[-]/g, '\\-')).join(' ')}(?:\\s|$)`);
    return !examples.some((line) => call.test(line));
  });
  assert.deepEqual(missing.map((w) => w.join(' ')), [], 'commands without an example in docs/CLI.md');
});
