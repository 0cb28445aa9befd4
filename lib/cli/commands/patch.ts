/** apply, diff, format-patch: a state's changes as git patches, and brought into a directory. */
import type { Command } from 'commander';
import { writeStdout } from '../output.js';
import { patchOptions, patchRequest, printPatch, type PatchFlags } from '../patches.js';
import { withClient, type ExitState, type Runner } from '../runner.js';

export function registerPatchCommands(program: Command, run: Runner, state: ExitState): void {
  applyCommand(program, run, state);
  diffCommand(program, run);
  formatPatchCommand(program, run);
}

function applyCommand(program: Command, run: Runner, state: ExitState): void {
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
}

function diffCommand(program: Command, run: Runner): void {
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
            for (const s of c.diffPatchSections(from, to, { ...patchRequest(f, paths), skipped })) await writeStdout(s.text);
          },
          true,
        );
        for (const s of skipped) process.stderr.write(`layerfs: skipped ${s} (git patches cannot hold FIFOs or devices)\n`);
        return;
      }
      const r = await withClient(g.store, (c) => c.diffPatch(from, to, patchRequest(f, paths)), true);
      await printPatch(out, r, f);
    })(),
  );
}

function formatPatchCommand(program: Command, run: Runner): void {
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
}
