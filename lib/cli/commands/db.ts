/** db, context and verify commands. */
import type { Command } from 'commander';
import { Client, LayerFsError } from '../../sdk/index.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { chooseStore, contextPath, PROJECT_STORE, storeFromContext, writeContext, writeProjectContext } from '../context.js';
import { formatBytes } from '../output.js';
import { barsWanted, repackProgress, verifyProgress } from '../progress.js';
import type { Runner } from '../main.js';

export function withClient<T>(store: string | undefined, fn: (c: Client) => Promise<T> | T, readonly = false): Promise<T> {
  const c = Client.connect(storeFromContext(store), { readonly });
  return Promise.resolve()
    .then(() => fn(c))
    .finally(() => c.close());
}

export function registerStoreCommands(program: Command, run: Runner, state: { code: number }): void {
  program
    .command('init [directory]')
    .description('make a Store in DIRECTORY/.layerfs/ (default: here); later commands below it find it, like git')
    .action((directory: string | undefined) =>
      run((out) => {
        const path = resolve(directory ?? '.', PROJECT_STORE);
        const existed = existsSync(path);
        const c = existed ? Client.connect(path) : Client.create(path);
        const info = c.info();
        c.close();
        out.result({ outcome: existed ? 'Exists' : 'Created', store: info }, () =>
          existed ? `a Store is already at ${info.path} (format ${info.formatVersion}); nothing changed` : `created Store ${info.path}; commands run below ${resolve(directory ?? '.')} use it`,
        );
      })(),
    );

  const db = program.command('db').description('create or check a Store file');
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
              (r.rowsSkipped ? `; ${r.rowsSkipped} rows of an earlier repack kept` : ''),
          ];
        });
      })(),
    );

  db.command('backup <path>')
    .description('a consistent online copy of the Store (SQLite backup API) while others read and write; verified before it is put in place')
    .action((path: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.backup(path));
        out.result(r, () => `backed up ${formatBytes(r.fileBytes)} (${r.pages} pages) to ${r.path} in ${(r.copyMs / 1000).toFixed(2)} s; verified ${r.states} states, ${r.objectsChecked} objects in ${(r.verifyMs / 1000).toFixed(2)} s`);
      })(),
    );

  const ctx = program.command('context').description('choose the Store later commands use');
  ctx
    .command('use')
    .description('record the Store in the user-wide context file, or with --project in ./.layerfs/context.json (give it with --store PATH)')
    .option('--project', 'only for commands run below this directory')
    .action((opts: { project?: boolean }) =>
      run((out, g) => {
        if (!g.store) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'context use needs --store PATH', { argument: '--store', hint: 'layerfs context use --store PATH [--project]' });
        const c = Client.connect(g.store, { readonly: true });
        const path = c.storePath;
        c.close();
        const file = opts.project ? writeProjectContext('.', { store: path }) : writeContext({ store: path });
        out.result({ outcome: 'Updated', context: file, store: path }, () => `using Store ${path} (recorded in ${file})`);
      })(),
    );
  ctx
    .command('show')
    .description('print the Store commands here use, and why')
    .action(() =>
      run((out, g) => {
        const c = chooseStore(g.store);
        out.result({ context: contextPath(), store: c?.store ?? null, via: c?.via ?? null }, () =>
          c ? `store ${c.store}
via ${c.via}` : `no Store selected (no --store, no $LAYERFS_STORE, no .layerfs/ above here, no context in ${contextPath()})`,
        );
      })(),
    );

  program
    .command('verify')
    .description('re-hash everything reachable from every state; exits 1 on any fault')
    .action(() =>
      run(async (out, g) => {
        const bar = verifyProgress(barsWanted(g));
        const r = await withClient(g.store, (c) => c.verify({ onProgress: bar.update }), true).finally(bar.stop);
        out.result(r, () => {
          const lines = [`${r.ok ? 'ok' : 'DAMAGED'}: ${r.states} states, ${r.objectsChecked} objects, ${formatBytes(r.bytesChecked)} re-hashed; sqlite ${r.sqliteCheck}`];
          for (const d of r.damaged) lines.push(`  damaged ${d.objectId}: ${d.message}; reached from ${d.states.join(', ')}`);
          return lines;
        });
        if (!r.ok) state.code = 1;
      })(),
    );
}
