/** The flags and printing shared by `diff` and `workspace diff`: name-status, --stat or a git patch. */
import type { Command } from 'commander';
import { formatStat, LayerFsError, type PatchResult } from '../sdk/index.js';
import { CHANGE_LETTER, writeStdout, type Out } from './output.js';

export interface PatchFlags {
  patch?: boolean;
  stat?: boolean;
  text?: boolean;
  binary?: boolean;
  fullIndex?: boolean;
  unified?: string;
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
  if (!f.patch && !f.stat) await writeStdout(r.files.map((s) => `${CHANGE_LETTER[s.change]}\t${s.oldPath !== undefined ? `${s.oldPath} -> ` : ''}${s.path}\n`).join(''));
}

export function patchOptions(cmd: Command): Command {
  return cmd
    .option('-p, --patch', 'print a unified, git-compatible patch (`git apply` accepts it)')
    .option('--stat', "print git's --stat summary")
    .option('-a, --text', 'treat every file as text')
    .option('--binary', 'write binary changes as GIT binary patch data (else one summary line)')
    .option('--full-index', 'full 40-digit blob ids on index lines')
    .option('-U, --unified <n>', 'lines of context (default 3)');
}

/** The SDK's patch request from the flags and the paths after `--`. */
export function patchRequest(f: PatchFlags, paths: string[]) {
  const context = f.unified === undefined ? undefined : /^\d+$/.test(f.unified) ? Number(f.unified) : NaN;
  if (Number.isNaN(context)) throw new LayerFsError('ERR_INVALID_ARGUMENT', `-U must be a non-negative integer, got ${JSON.stringify(f.unified)}`, { argument: '--unified' });
  return { paths, text: f.text, binary: f.binary, fullIndex: f.fullIndex, ...(context !== undefined ? { context } : {}) };
}
