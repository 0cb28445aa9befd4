/** init: a Store in DIRECTORY/.layerfs/, found by later commands below it as git finds .git. */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Client } from '../../sdk/index.js';
import { PROJECT_STORE } from '../context.js';
import type { Runner } from '../runner.js';

export function registerInitCommand(program: Command, run: Runner): void {
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
}
