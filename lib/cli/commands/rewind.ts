/** rewind | checkpoint | checkpoints */
import type { Command } from 'commander';
import { parseMetadata } from '../args.js';
import { short } from '../output.js';
import { withClient, type Runner } from '../runner.js';

export function registerRewindCommands(program: Command, run: Runner): void {
  program
    .command('rewind <branch> <to>')
    .description('publish a new Commit whose files equal an older state (a checkpoint name, a Commit of the Branch, or its base Layer); the head never moves backwards')
    .option('-m, --message <text>', 'the Commit message (default: "rewind to ID")')
    .option('--metadata <json>', 'a JSON object recorded with the Commit')
    .option('--author <name>', 'who the Commit is by (default: $LAYERFS_AUTHOR, else user@host)')
    .action((branch: string, to: string, opts: { message?: string; metadata?: string; author?: string }) =>
      run(async (out, g) => {
        const metadata = opts.metadata === undefined ? undefined : parseMetadata(opts.metadata);
        const r = await withClient(g.store, (c) => c.rewind(branch, to, { message: opts.message, metadata, author: opts.author }));
        const what = `${r.target.kind} ${r.target.checkpoint ?? short(r.target.id)}`;
        out.result(r, () => (r.outcome === 'Created' ? `CREATED commit ${r.commit.id} = ${what} (previous ${short(r.previousHead)})` : `UP_TO_DATE ${branch} already shows ${what}`));
      })(),
    );
  program
    .command('checkpoint <branch> <name>')
    .description("pin the Branch's current state under a name, to rewind to later")
    .action((branch: string, name: string) =>
      run(async (out, g) => {
        const cp = await withClient(g.store, (c) => c.checkpoint(branch, name));
        out.result({ outcome: 'Created', checkpoint: cp }, () => `checkpoint ${cp.name} of ${cp.branch} = ${cp.commitId ? `commit ${short(cp.commitId)}` : `base layer ${short(cp.baseLayerId)}`}`);
      })(),
    );
  program
    .command('checkpoints <branch>')
    .description("the Branch's checkpoints, oldest first")
    .action((branch: string) =>
      run(async (out, g) => {
        const list = await withClient(g.store, (c) => c.checkpoints(branch));
        out.result({ checkpoints: list }, () => list.map((cp) => `${cp.name}\t${cp.commitId ? short(cp.commitId) : `layer:${short(cp.baseLayerId)}`}\t${cp.createdAt}`));
      })(),
    );
}
