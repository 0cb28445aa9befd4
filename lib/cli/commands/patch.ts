/** diff, workspace diff: git patches of states and Workspaces. */
import type { Command } from 'commander';
import { LayerFsError, type PatchResult } from '../../sdk/index.js';
import type { Out } from '../output.js';
import type { Runner } from '../main.js';
import { formatStat } from '../../sdk/index.js';
import { withClient } from './db.js';

interface PatchFlags {
  patch?: boolean;
  stat?: boolean;
  text?: boolean;
  binary?: boolean;
  fullIndex?: boolean;
  unified?: string;
}

const LETTER = { added: 'A', deleted: 'D', modified: 'M', renamed: 'R' } as const;

export async function writeStdout(b: Buffer | string): Promise<void> {
  if (!process.stdout.write(b)) await new Promise((r) => process.stdout.once('drain', r));
}

/** Prints a patch result as --patch / --stat / name-status (default) / --json ask. */
export async function printPatch(out: Out, r: PatchResult, f: PatchFlags): Promise<void> {
  if (out.json) {
    out.result({ files: r.files, skipped: r.skipped, ...(f.patch ? { patch: r.patch.toString('utf8') } : {}) }, () => []);
    return;
  }
  for (const s of r.skipped) process.stderr.write(`layerfs: skipped ${s} (git patches cannot hold FIFOs or devices)\n`);
  if (f.stat && r.files.length > 0) await writeStdout(formatStat(r.files).join('\n') + '\n' + (f.patch ? '\n' : ''));
  if (f.patch) await writeStdout(r.patch);
  if (!f.patch && !f.stat) await writeStdout(r.files.map((s) => `${LETTER[s.change]}\t${s.oldPath !== undefined ? `${s.oldPath} -> ` : ''}${s.path}\n`).join(''));
}

function patchOptions(cmd: Command): Command {
  return cmd
    .option('-p, --patch', 'print a unified, git-compatible patch (`git apply` accepts it)')
    .option('--stat', "print git's --stat summary")
    .option('-a, --text', 'treat every file as text')
    .option('--binary', 'write binary changes as GIT binary patch data (else one summary line)')
    .option('--full-index', 'full 40-digit blob ids on index lines')
    .option('-U, --unified <n>', 'lines of context (default 3)');
}

function requestOf(f: PatchFlags, paths: string[]) {
  const context = f.unified === undefined ? undefined : /^\d+$/.test(f.unified) ? Number(f.unified) : NaN;
  if (Number.isNaN(context)) throw new LayerFsError('ERR_INVALID_ARGUMENT', `-U must be a non-negative integer, got ${JSON.stringify(f.unified)}`, { argument: '--unified' });
  return { paths, text: f.text, binary: f.binary, fullIndex: f.fullIndex, ...(context !== undefined ? { context } : {}) };
}

export function registerPatchCommands(program: Command, run: Runner, state: { code: number }): void {
  program
    .command('apply <state> [path...]')
    .usage('[options] <state> --to <dir> [-- path...]')
    .description("bring a state's changes (relative to --from, default its fork base) into an existing directory or git work tree; nothing is written if any path conflicts")
    .requiredOption('--to <dir>', 'the directory to change')
    .option('--from <state>', 'count changes from this state (default: the Layer the Branch was forked from; a Layer\'s parent)')
    .option('--check', 'only check: list what would change and any conflicts')
    .option('--git', 'stage the changed paths in the git index')
    .option('--force', 'apply even though the git work tree has uncommitted changes')
    .action((ref: string, paths: string[], f: { to: string; from?: string; check?: boolean; git?: boolean; force?: boolean }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.apply(ref, f.to, { from: f.from, check: f.check, git: f.git, force: f.force, paths }), true);
        out.result(r, () => {
          if (r.outcome === 'Conflicts') return [`CONFLICTS: nothing written to ${r.target}`, ...r.conflicts.map((x) => `  ${x.path}: ${x.reason}`)];
          const lines = r.changes.map((x) => `${x.change.padEnd(6)} ${x.path}`);
          for (const k of r.kept) lines.push(`kept   ${k} (holds files the base does not have)`);
          for (const k of r.skipped) lines.push(`skipped ${k} (FIFO or device)`);
          lines.push(`${r.outcome === 'Checked' ? 'would change' : 'changed'} ${r.changes.length} paths in ${r.target}`);
          return lines;
        });
        if (r.outcome === 'Conflicts') state.code = 1;
      })(),
    );

  patchOptions(
    program
      .command('diff <from> <to> [path...]')
      .usage('[options] <from> <to> [-- path...]')
      .description('what changed from one state to another: paths (default), --stat, or a git patch with --patch'),
  ).action((from: string, to: string, paths: string[], f: PatchFlags) =>
    run(async (out, g) => {
      if (f.patch && !f.stat && !out.json) {
        // Section by section: a large patch is never held whole.
        const skipped: string[] = [];
        await withClient(
          g.store,
          async (c) => {
            for (const s of c.diffPatchSections(from, to, { ...requestOf(f, paths), skipped })) await writeStdout(s.text);
          },
          true,
        );
        for (const s of skipped) process.stderr.write(`layerfs: skipped ${s} (git patches cannot hold FIFOs or devices)\n`);
        return;
      }
      const r = await withClient(g.store, (c) => c.diffPatch(from, to, requestOf(f, paths)), true);
      await printPatch(out, r, f);
    })(),
  );
  program
    .command('format-patch <branch>')
    .description('one git mbox patch per Commit (message, author, time), for `git am`')
    .requiredOption('-o, --out <dir>', 'directory for the patch files')
    .option('--since <commit>', 'only Commits after this one')
    .action((branch: string, f: { out: string; since?: string }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.formatPatch(branch, f.out, { since: f.since }), true);
        out.result(r, () => [...r.files, ...r.empty.map((id) => `skipped ${id.slice(0, 12)} (no change git can see)`)]);
      })(),
    );
  program
    .command('grep <pattern> <state> [path...]')
    .usage('[options] <pattern> <state> [-- path...]')
    .description("search a state's files without exporting it (path:line:text; exits 1 when nothing matches)")
    .option('-i, --ignore-case', 'ignore case')
    .option('-F, --fixed-strings', 'the pattern is plain text, not a regular expression')
    .option('-l, --files-with-matches', 'print only the names of matching files')
    .option('-a, --text', 'search binary files as text')
    .option('-m, --limit <n>', 'stop after n matching lines (default 10000)')
    .action((pattern: string, ref: string, paths: string[], f: { ignoreCase?: boolean; fixedStrings?: boolean; filesWithMatches?: boolean; text?: boolean; limit?: string }) =>
      run(async (out, g) => {
        const limit = f.limit === undefined ? undefined : Number(f.limit);
        const r = await withClient(g.store, (c) => c.grep(pattern, ref, { paths, ignoreCase: f.ignoreCase, fixed: f.fixedStrings, text: f.text, limit }), true);
        out.result(r, () => {
          const lines = f.filesWithMatches ? [...new Set(r.matches.map((m) => m.path))] : r.matches.map((m) => `${m.path}:${m.line}:${m.text}`);
          for (const b of r.binaryFiles) lines.push(f.filesWithMatches ? b : `Binary file ${b} matches`);
          if (r.truncated) lines.push(`… stopped after ${r.matches.length} lines (raise --limit)`);
          return lines;
        });
        if (r.matches.length === 0 && r.binaryFiles.length === 0) state.code = 1;
      })(),
    );
  const ws = program.commands.find((c) => c.name() === 'workspace')!;
  ws.command('restore <workspace> <path...>')
    .description('take paths back from any state into the Workspace (each subtree becomes the source\'s)')
    .requiredOption('--source <state>', 'the state to take them from')
    .action((ref: string, paths: string[], f: { source: string }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.restore(ref, { source: f.source, paths }), true);
        out.result(r, () => [...r.changes.map((x) => `${x.change.padEnd(6)} ${x.path}`), `restored ${r.changes.length} paths`]);
      })(),
    );
  patchOptions(
    ws
      .command('diff <workspace> [path...]')
      .usage('[options] <workspace> [-- path...]')
      .description("the Workspace's uncommitted changes: paths (default), --stat, or a git patch with --patch"),
  ).action((ref: string, paths: string[], f: PatchFlags) =>
    run(async (out, g) => {
      const r = await withClient(g.store, (c) => c.workspaceDiff(ref, requestOf(f, paths)), true);
      await printPatch(out, r, f);
    })(),
  );
}
