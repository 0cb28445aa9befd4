/** db create | connect | repack | backup | gc: making, checking and keeping a Store file. */
import type { Command } from 'commander';
import { Client, LayerFsError } from '../../sdk/index.js';
import { formatBytes } from '../output.js';
import { barsWanted, repackProgress } from '../progress.js';
import { withClient, type Runner } from '../runner.js';

export function registerDbCommands(program: Command, run: Runner): void {
  const db = program.command('db').description('create or check a Store file');
  createCommand(db, run);
  connectCommand(db, run);
  repackCommand(db, run);
  backupCommand(db, run);
  gcCommand(db, run);
}

function createCommand(db: Command, run: Runner): void {
  db.command('create <path>')
    .description('create a new Store (refuses an existing path)')
    .action((path: string) =>
      run((out) => {
        const c = Client.create(path);
        const info = c.info();
        c.close();
        out.result({ outcome: 'Created', store: info }, () => `created Store ${info.path} (format ${info.formatVersion})`);
      })(),
    );
}

function connectCommand(db: Command, run: Runner): void {
  db.command('connect <path>')
    .description('check that a file is a Store of a supported format')
    .action((path: string) =>
      run((out) => {
        const c = Client.connect(path, { readonly: true });
        const info = c.info();
        c.close();
        out.result({ outcome: 'Connected', store: info }, () => [
          `Store ${info.path}`,
          `  format ${info.formatVersion}, ${info.layerStacks} LayerStacks, ${info.layers} Layers, ${info.objects} objects, ${formatBytes(info.fileBytes)}`,
        ]);
      })(),
    );
}

function repackCommand(db: Command, run: Runner): void {
  db.command('repack')
    .description('rewrite the Store for size (slow zstd, larger groups, then VACUUM); ids and content never change')
    .option('--level <n>', 'zstd level 1-22 (default 19)')
    .option('--full', 'also rewrite the rows an earlier repack wrote')
    .action((opts: { level?: string; full?: boolean }) =>
      run(async (out, g) => {
        const level = opts.level === undefined ? undefined : /^\d+$/.test(opts.level) ? Number(opts.level) : NaN;
        if (level !== undefined && !(level >= 1 && level <= 22)) {
          throw new LayerFsError('ERR_INVALID_ARGUMENT', `--level must be an integer from 1 to 22, got ${JSON.stringify(opts.level)}`, { argument: '--level' });
        }
        const bar = repackProgress(barsWanted(g));
        const r = await withClient(g.store, (c) => c.repack({ level, full: opts.full, onProgress: bar.update })).finally(bar.stop);
        out.result(r, () => {
          const pct = r.fileBytesBefore ? ((1 - r.fileBytesAfter / r.fileBytesBefore) * 100).toFixed(1) : '0.0';
          return [
            `repacked ${r.objects} objects in ${(r.ms / 1000).toFixed(2)} s (level ${r.level}; rewrite ${(r.rewriteMs / 1000).toFixed(2)} s, vacuum ${(r.vacuumMs / 1000).toFixed(2)} s)`,
            `  Store ${formatBytes(r.fileBytesBefore)} -> ${formatBytes(r.fileBytesAfter)} (${pct} % smaller); ${r.rowsBefore} pack rows -> ${r.rowsAfter}` +
              (r.rowsSkipped ? `; ${r.rowsSkipped} rows of an earlier repack kept` : '') +
              (r.rowsKept ? `; ${r.rowsKept} rows kept as they were (rewritten they were larger)` : ''),
          ];
        });
      })(),
    );
}

function backupCommand(db: Command, run: Runner): void {
  db.command('backup <path>')
    .description('a consistent online copy of the Store (SQLite backup API) while others read and write; verified before it is put in place')
    .action((path: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.backup(path));
        out.result(r, () => `backed up ${formatBytes(r.fileBytes)} (${r.pages} pages) to ${r.path} in ${(r.copyMs / 1000).toFixed(2)} s; verified ${r.states} states, ${r.objectsChecked} objects in ${(r.verifyMs / 1000).toFixed(2)} s`);
      })(),
    );
}

function gcCommand(db: Command, run: Runner): void {
  db.command('gc')
    .description('delete what no kept state reaches (bounded transactions; safe while others read and write)')
    .option('--dry-run', 'report what would be freed; change nothing')
    .option('--vacuum', 'afterwards return free pages to the file system')
    .action((opts: { dryRun?: boolean; vacuum?: boolean }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.gc({ dryRun: opts.dryRun, vacuum: opts.vacuum }), opts.dryRun);
        out.result(r, () => [
          `${r.outcome === 'DryRun' ? 'would delete' : 'deleted'} ${r.outcome === 'DryRun' ? r.garbageObjects : r.deletedObjects} of ${r.objects} objects (${formatBytes(r.garbageBytes)} canonical) from ${r.states} kept states in ${(r.ms / 1000).toFixed(2)} s; ${r.commitsRemoved} Commit rows nothing keeps ${r.outcome === 'DryRun' ? 'would be ' : ''}removed`,
          `  ${r.outcome === 'DryRun' ? 'would free' : 'freed'} ${formatBytes(r.storedBytesFreed)} stored: ${r.rowsDeleted} rows deleted, ${r.rowsRewritten} rewritten into ${r.rowsWritten}; ${formatBytes(r.garbageBytesKept)} of garbage left in rows mostly live`,
          `  Store ${formatBytes(r.fileBytesBefore)} -> ${formatBytes(r.fileBytesAfter)} (${formatBytes(r.freeBytes)} free pages${r.vacuumMs ? `; vacuum ${(r.vacuumMs / 1000).toFixed(2)} s` : ', reused by later writes; --vacuum returns them'})`,
        ]);
      })(),
    );
}
