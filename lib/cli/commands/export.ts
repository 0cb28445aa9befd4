/** export: a state into a directory, or as a deterministic tar archive. */
import type { Command } from 'commander';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { LayerFsError, type Client } from '../../sdk/index.js';
import { formatBytes, quoteName, treeCounts } from '../output.js';
import { barsWanted, exportProgress } from '../progress.js';
import { withClient, type Runner } from '../runner.js';

export function registerExportCommand(program: Command, run: Runner): void {
  program
    .command('export <state> [directory]')
    .description('write a state into a new or empty directory, or as a tar archive (--format tar)')
    .option('--format <format>', 'dir (default) or tar: a deterministic pax tar, streamed')
    .option('-o, --output <file>', "with --format tar: the file to write ('-' or absent: stdout)")
    .action((state: string, directory: string | undefined, opts: { format?: string; output?: string }) =>
      run(async (out, g) => {
        const format = opts.format ?? 'dir';
        if (format === 'tar') {
          if (directory !== undefined) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'with --format tar give the file with -o FILE, not a directory');
          const r = await withClient(g.store, (c) => writeTar(c, state, opts.output), true);
          if (opts.output !== undefined && opts.output !== '-') out.result(r, () => `wrote ${r.files} files, ${r.directories} directories, ${r.symlinks} symlinks (${formatBytes(r.bytes)}) to ${quoteName(opts.output!)}`);
          return;
        }
        if (format !== 'dir') throw new LayerFsError('ERR_INVALID_ARGUMENT', `--format must be dir or tar, got ${JSON.stringify(format)}`, { argument: '--format' });
        if (directory === undefined) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give the directory to export into (or --format tar)');
        const bar = exportProgress(barsWanted(g), 'export');
        const r = await withClient(g.store, (c) => c.export(state, directory, { onProgress: bar.update }), true).finally(bar.stop);
        out.result(r, () => `exported ${treeCounts(r)} (${formatBytes(r.bytes)}) to ${quoteName(r.target)}`);
      })(),
    );
}

/** Streams the tar to a file (written under a temporary name, then renamed) or stdout. */
async function writeTar(c: Client, state: string, output: string | undefined) {
  if (output === undefined || output === '-') {
    return c.exportTar(state, (b) => (process.stdout.write(b) ? undefined : new Promise<void>((r) => process.stdout.once('drain', () => r()))));
  }
  const tmp = `${output}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'wx', 0o644);
  try {
    const r = await c.exportTar(state, (b) => {
      let off = 0;
      while (off < b.length) off += writeSync(fd, b, off, b.length - off);
    });
    fsyncSync(fd);
    renameSync(tmp, output);
    return r;
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  } finally {
    closeSync(fd);
  }
}
