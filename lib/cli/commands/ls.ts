/** ls: a directory of any state, like ls -l. */
import type { Command } from 'commander';
import { formatBytes, modeString, mtimeText, quoteName } from '../output.js';
import { withReader, type Runner } from '../runner.js';

export function registerLsCommand(program: Command, run: Runner): void {
  program
    .command('ls <state> [path]')
    .description('list a directory of a state (a Layer id, prefix or label STACK#SEQ, a Commit, a Branch or a LayerStack name), like ls -l')
    .option('-H, --human-readable', 'sizes in KiB, MiB, …')
    .action((state: string, path: string | undefined, opts: { humanReadable?: boolean }) =>
      run(async (out, g) => {
        const rows = await withReader(g.store, (r) => r.ls(state, path));
        // A directory's size is not stored (its entries are): '-' rather than a misleading 0.
        const size = (e: (typeof rows)[number]) => (e.kind === 'dir' ? '-' : opts.humanReadable ? formatBytes(e.size) : String(e.size));
        out.result({ entries: rows }, () =>
          rows.map(
            (e) =>
              `${modeString(e.kind, e.mode)} ${String(e.nlink).padStart(2)} ${String(e.uid).padStart(5)} ${String(e.gid).padStart(5)} ${size(e).padStart(10)} ${mtimeText(e.mtimeNs)} ${quoteName(e.nameBytes)}${e.target !== undefined ? ` -> ${quoteName(e.target)}` : ''}`,
          ),
        );
      })(),
    );
}
