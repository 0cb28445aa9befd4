/** query layerstacks | layers | branches | commits | workspaces | pins | deleted: read-only listings. */
import type { Command } from 'commander';
import { short } from '../output.js';
import { withClient, withReader, type Runner } from '../runner.js';

export function registerQueryCommands(program: Command, run: Runner): void {
  const q = program.command('query').description('list LayerStacks, Layers and more');
  layerStacksCommand(q, run);
  layersCommand(q, run);
  branchesCommand(q, run);
  commitsCommand(q, run);
  workspacesCommand(q, run);
  pinsCommand(q, run);
  deletedCommand(q, run);
}

function layerStacksCommand(q: Command, run: Runner): void {
  q.command('layerstacks')
    .description('list LayerStacks')
    .action(() =>
      run(async (out, g) => {
        const rows = await withReader(g.store, (r) => r.layerStacks());
        out.result({ layerStacks: rows }, () => rows.map((s) => `${s.name}\t${s.id}\thead ${short(s.headLayerId)}`));
      })(),
    );
}

function layersCommand(q: Command, run: Runner): void {
  q.command('layers')
    .description('list Layers, oldest first')
    .option('--layerstack <name>', 'only this LayerStack')
    .action((opts: { layerstack?: string }) =>
      run(async (out, g) => {
        const rows = await withReader(g.store, (r) => r.layers({ layerStack: opts.layerstack }));
        out.result({ layers: rows }, () => rows.map((l) => `${l.id}\t${l.layerStack}#${l.seq}\t${l.createdAt}`));
      })(),
    );
}

function branchesCommand(q: Command, run: Runner): void {
  q.command('branches')
    .description('list Branches')
    .option('--layerstack <name>', 'only this LayerStack')
    .action((opts: { layerstack?: string }) =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.branches({ layerStack: opts.layerstack }), true);
        out.result({ branches: rows }, () => rows.map((b) => `${b.name}\t${b.id}\t${b.layerStack}\thead ${short(b.headCommitId)}\tbase ${short(b.baseLayerId)}`));
      })(),
    );
}

function commitsCommand(q: Command, run: Runner): void {
  q.command('commits')
    .description('list Commits, newest first')
    .option('--branch <branch>', 'only this Branch')
    .action((opts: { branch?: string }) =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.commits({ branch: opts.branch }), true);
        out.result({ commits: rows }, () => rows.map((c) => `${c.id}\t${c.createdAt}\tparent ${short(c.parentCommitId)}${c.pruned ? '\tpruned' : ''}`));
      })(),
    );
}

function workspacesCommand(q: Command, run: Runner): void {
  q.command('workspaces')
    .description('list Workspaces')
    .option('--branch <branch>', 'only this Branch')
    .action((opts: { branch?: string }) =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.workspaces({ branch: opts.branch }), true);
        out.result({ workspaces: rows }, () => rows.map((w) => `${w.id}\t${w.branch}\t${w.projection}\t${w.state}\t${w.path}`));
      })(),
    );
}

function pinsCommand(q: Command, run: Runner): void {
  q.command('pins')
    .description('list pinned states')
    .action(() =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.pins(), true);
        out.result({ pins: rows }, () => rows.map((p) => `${p.state}\troot ${short(p.rootId)}\t${p.createdAt}`));
      })(),
    );
}

function deletedCommand(q: Command, run: Runner): void {
  q.command('deleted')
    .description('list deleted Branches and LayerStacks, with when')
    .action(() =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.deleted(), true);
        out.result({ deleted: rows }, () => rows.map((d) => `${d.kind}\t${d.name}\t${d.id}\t${d.layerStack}\thead ${short(d.head)}\tdeleted ${d.deletedAt}`));
      })(),
    );
}
