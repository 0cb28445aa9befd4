/** layerstack, query, ls, cat and export commands. */
import type { Command } from 'commander';
import { closeSync, createReadStream, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { LayerFsError, type Client } from '../../sdk/index.js';
import { formatBytes, modeString, mtimeText, quoteName, treeCounts } from '../output.js';
import { barsWanted, exportProgress, importProgress } from '../progress.js';
import type { Runner } from '../main.js';
import { withClient } from './db.js';

const short = (id: string) => id.slice(0, 12);

/** A --offset / --length value: a non-negative decimal integer. */
function byteCount(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = /^\d+$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n)) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${flag} must be a non-negative integer, got ${JSON.stringify(v)}`, { argument: flag });
  return n;
}

export function registerStateCommands(program: Command, run: Runner, _state: { code: number }): void {
  const ls = program.command('layerstack').description('LayerStacks: shared, linear histories of Layers');
  ls.command('init [directory]')
    .description('create a LayerStack whose genesis Layer is empty, imported from a directory, or from a tar archive')
    .requiredOption('--name <name>', 'LayerStack name')
    .option('--empty', 'start from an empty root')
    .option('--exclude <glob>', 'leave out paths matching this gitignore pattern (repeatable; after the directory\'s .layerfsignore)', (v: string, prev: string[] = []) => [...prev, v])
    .option('--from-tar <file>', "import a tar archive (ustar, pax or GNU; '-' reads stdin)")
    .action((directory: string | undefined, opts: { name: string; empty?: boolean; exclude?: string[]; fromTar?: string }) =>
      run(async (out, g) => {
        if (opts.fromTar !== undefined && (directory !== undefined || opts.empty)) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give a directory, --from-tar or --empty, only one');
        const bar = importProgress(barsWanted(g) && (directory !== undefined || opts.fromTar !== undefined));
        const r = await withClient(g.store, (c) =>
          opts.fromTar !== undefined
            ? c.initLayerStackFromTar({ name: opts.name, tar: opts.fromTar === '-' ? process.stdin : createReadStream(opts.fromTar), onProgress: bar.update })
            : c.initLayerStack({ name: opts.name, source: directory, empty: opts.empty ?? directory === undefined, exclude: opts.exclude, onProgress: bar.update }),
        ).finally(bar.stop);
        out.result(r, () => {
          const lines = [
            `created LayerStack ${r.layerStack.name} ${r.layerStack.id}`,
            `genesis Layer ${r.layer.id}`,
            `  ${treeCounts(r)}, ${formatBytes(r.bytes)} in ${(r.ms / 1000).toFixed(2)} s; ${r.objectsInserted} objects stored, ${r.objectsReused} reused`,
          ];
          for (const s of r.skipped) lines.push(`  skipped socket ${quoteName(s)}`);
          return lines;
        });
      })(),
    );

  const q = program.command('query').description('list LayerStacks, Layers and more');
  q.command('layerstacks')
    .description('list LayerStacks')
    .action(() =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.layerStacks(), true);
        out.result({ layerStacks: rows }, () => rows.map((s) => `${s.name}\t${s.id}\thead ${short(s.headLayerId)}`));
      })(),
    );
  q.command('layers')
    .description('list Layers, oldest first')
    .option('--layerstack <name>', 'only this LayerStack')
    .action((opts: { layerstack?: string }) =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.layers({ layerStack: opts.layerstack }), true);
        out.result({ layers: rows }, () => rows.map((l) => `${l.id}\t${l.layerStack}#${l.seq}\t${l.createdAt}`));
      })(),
    );

  program
    .command('ls <state> [path]')
    .description('list a directory of a state (a Layer id, prefix or label STACK#SEQ, a Commit, a Branch or a LayerStack name), like ls -l')
    .option('-H, --human-readable', 'sizes in KiB, MiB, …')
    .action((state: string, path: string | undefined, opts: { humanReadable?: boolean }) =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.ls(state, path), true);
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

  program
    .command('cat <state> <path>')
    .description("write a file's content from a state to stdout")
    .option('--offset <n>', 'start at this byte (reads only the chunks that overlap the range)')
    .option('--length <n>', 'at most this many bytes')
    .action((state: string, path: string, opts: { offset?: string; length?: string }) =>
      run(async (_out, g) => {
        const range = opts.offset !== undefined || opts.length !== undefined ? { offset: byteCount(opts.offset, '--offset'), length: byteCount(opts.length, '--length') } : undefined;
        await withClient(
          g.store,
          async (c) => {
            for (const piece of c.readFile(state, path, range)) {
              if (!process.stdout.write(piece)) await new Promise((r) => process.stdout.once('drain', r));
            }
          },
          true,
        );
      })(),
    );

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
