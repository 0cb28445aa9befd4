/**
 * `layerfs tour`: the main job end to end on an embedded default, in a few seconds, with words
 * that teach the vocabulary. It makes (or reuses) the Store in ./.layerfs/, imports a real
 * directory as a LayerStack's genesis Layer, forks a Branch, writes a change in a Workspace,
 * commits it, shows the diff and the log, publishes the Branch with Add and ends the Workspace.
 */
import type { Command } from 'commander';
import { appendFileSync, existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, LayerFsError, type DiffPage } from '../../sdk/index.js';
import { chooseStore, PROJECT_STORE } from '../context.js';
import { CHANGE_LETTER, formatBytes, quoteName } from '../output.js';
import type { Runner } from '../runner.js';

/** layerfs's own documentation: a real directory every installed copy carries. */
function defaultSource(): string {
  for (const rel of ['../../../docs', '../../../../docs']) {
    const p = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(join(p, 'CLI.md'))) return p;
  }
  throw new LayerFsError('ERR_NOT_FOUND', 'the documentation directory of this layerfs copy is missing', { hint: 'give a directory to import: layerfs tour DIR' });
}

/** `tour`, or `tour-2`, `tour-3`, … when earlier tours left theirs. */
function freeName(c: Client): string {
  const taken = new Set(c.layerStacks().map((s) => s.name));
  for (let i = 1; ; i++) {
    const name = i === 1 ? 'tour' : `tour-${i}`;
    if (!taken.has(name)) return name;
  }
}

/** Writes the tour's change: a new file, and a line appended to the first top-level file. */
function makeChange(c: Client, branch: string, dir: string): string[] {
  writeFileSync(join(dir, 'TOUR.md'), '# Written in a Workspace\n\nThis file exists only on the Branch until Add publishes it.\n');
  const first = c.ls(branch).find((e) => e.kind === 'file' && e.name !== 'TOUR.md');
  if (!first) return ['wrote TOUR.md'];
  appendFileSync(join(dir, first.name), '\nA line appended in the tour.\n');
  return ['wrote TOUR.md', `appended a line to ${quoteName(first.name)}`];
}

const diffLines = (page: DiffPage) => page.entries.map((e) => `     ${CHANGE_LETTER[e.change]}  ${quoteName(e.path)}`);

export function registerTourCommand(program: Command, run: Runner): void {
  program
    .command('tour [directory]')
    .description("the main job in a few seconds: a Store in ./.layerfs/, a directory imported (default: layerfs's docs), a Branch, a Workspace, a Commit, its diff and log")
    .action((directory: string | undefined) =>
      run(async (out, g) => {
        const t0 = performance.now();
        const chosen = chooseStore(g.store);
        const storePath = chosen?.store ?? resolve(PROJECT_STORE);
        const created = !existsSync(storePath);
        const source = resolve(directory ?? defaultSource());
        if (!existsSync(source) || !statSync(source).isDirectory()) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `not a directory: ${source}`, { path: source, hint: 'give a directory to import: layerfs tour DIR' });
        const c = created ? Client.create(storePath) : Client.connect(storePath);
        try {
          const name = freeName(c);
          const init = await c.initLayerStack({ name, source });
          const branch = c.forkBranch({ name: `${name}-edit`, layer: init.layer.id });
          const at = join(dirname(storePath), `${name}-workspace`);
          const ws = await c.createWorkspace(branch.name, { at, projection: 'materialize' });
          const changed = makeChange(c, branch.name, ws.path);
          const status = await c.workspaceStatus(ws.id);
          const commit = await c.commitWorkspace(ws.id);
          if (commit.outcome !== 'Created') throw new LayerFsError('ERR_BUSY', `the tour's commit did not create a Commit (${commit.outcome})`, { hint: 'run the tour again' });
          const diff = c.diff(init.layer.id, branch.name);
          const log = c.log(branch.name);
          const added = c.add(branch.name);
          const ended = await c.endWorkspace(ws.id);
          const ms = performance.now() - t0;
          const rel = (p: string) => relative(process.cwd(), p) || '.';
          out.result({ store: storePath, storeCreated: created, init, branch, workspace: ws, status, commit, diff, log, add: added, end: ended, ms }, () => [
            `layerfs tour: the main job, start to end (${(ms / 1000).toFixed(1)} s)`,
            '',
            `1. Store       ${rel(storePath)}  ${created ? 'created' : 'reused'}: one SQLite file that holds every state`,
            `2. LayerStack  ${name}: a shared, linear history of Layers (complete states)`,
            `   Layer #0    ${init.layer.id.slice(0, 12)}  imported ${quoteName(source)}: ${init.files} files, ${init.directories} directories, ${formatBytes(init.bytes)}`,
            `3. Branch      ${branch.name}: a writable line forked from Layer #0 (copies no data)`,
            `4. Workspace   ${rel(ws.path)}: the Branch head as ordinary files (the materialize Projection)`,
            ...changed.map((l) => `     ${l}`),
            `   status      ${status.changes.length} changes, like git status`,
            `5. Commit      ${commit.commit.id.slice(0, 12)}: the Workspace's changes, recorded on the Branch (${commit.objectsInserted} new objects)`,
            `6. Diff        Layer #0 -> Branch ${branch.name}:`,
            ...diffLines(diff),
            `7. Log         ${branch.name}, newest first:`,
            ...log.map((x) => `     ${x.id.slice(0, 12)}  ${x.createdAt}`),
            added.outcome === 'Added'
              ? `8. Add         the Branch head published as Layer #${added.layer.seq} of ${name} (${added.layer.id.slice(0, 12)})`
              : `8. Add         ${added.outcome}`,
            `   Workspace   ended: its files are gone, its Commit stays on the Branch`,
            '',
            'Try next:',
            `  npx layerfs ls ${name}                  # read any state without mounting`,
            `  npx layerfs cat ${name} TOUR.md`,
            `  npx layerfs workspace create ${branch.name} --at ./ws   # then edit in ./ws and run, inside it:`,
            `  npx layerfs workspace commit            # (status, commit and end act on the Workspace you are in)`,
          ]);
        } finally {
          c.close();
        }
      })(),
    );
}
