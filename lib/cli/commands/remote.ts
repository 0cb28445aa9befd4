/** remote add|ls|remove|init|refs, push, fetch, clone (docs/REMOTES.md). */
import type { Command } from 'commander';
import { Client, LayerFsError, type FetchResult, type PushResult, type TransferStats } from '../../sdk/index.js';
import { formatBytes, short } from '../output.js';
import { withClient, type ExitState, type Runner } from '../runner.js';

function transferLine(t: TransferStats, ms: number): string {
  return `${t.objects} objects, ${formatBytes(t.bytes)} in ${t.batches} batches (${t.asked} ids negotiated in ${t.queries} queries${t.whole ? `, ${t.whole} sent whole` : ''}) in ${(ms / 1000).toFixed(2)} s`;
}

function fetchLines(r: FetchResult): string[] {
  return [`fetched from ${r.remote}: ${transferLine(r.transfer, r.ms)}; ${r.layers} Layers, ${r.commits} Commits new here`, ...r.refs.map((x) => `  ${x.outcome}\t${r.remote}/${x.name}\t${x.kind}${x.kind === 'branch' ? ` of ${x.layerStack}` : ''}\t${short(x.head)}`)];
}

function pushLines(r: PushResult): string[] {
  if (r.outcome === 'Conflicted') {
    return [`CONFLICTED ${r.ref}: the remote head ${short(r.head)} changed what this Branch changed; nothing was pushed`, ...(r.conflicts ?? []).map((c) => `  ${c.kind} ${c.path} (Commit ${short(c.commit)}): ${c.message}`)];
  }
  const rec = r.reconciled ? ` (reconciled after ${r.reconciled.attempts} lost race(s): ${r.reconciled.replayed} Commits replayed, ${r.reconciled.merged.length} paths merged)` : '';
  return [`${r.outcome === 'Pushed' ? 'PUSHED' : 'UP_TO_DATE'} ${r.kind} ${r.ref} head ${short(r.head)}: ${r.layersSent} Layers, ${r.commitsSent} Commits; ${transferLine(r.transfer, r.ms)}${rec}`];
}

export function registerRemoteCommands(program: Command, run: Runner, state: ExitState): void {
  const remote = program.command('remote').description('remotes on PostgreSQL: where push, fetch and clone go');
  remote
    .command('add <name> <url>')
    .description('record a remote: postgres://USER@HOST[:PORT]/DB (no password: use ~/.pgpass or PGPASSWORD), or "env:" for the PG* variables')
    .action((name: string, url: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.remoteAdd(name, url));
        out.result({ outcome: 'Added', remote: r }, () => `added remote ${r.name} ${r.url}`);
      })(),
    );
  remote
    .command('ls')
    .description('list remotes')
    .action(() =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.remotes(), true);
        out.result({ remotes: rows }, () => rows.map((r) => `${r.name}\t${r.url}`));
      })(),
    );
  remote
    .command('remove <name>')
    .description('forget a remote and the remote heads recorded for it (the remote itself is untouched)')
    .action((name: string) =>
      run(async (out, g) => {
        await withClient(g.store, (c) => c.remoteRemove(name));
        out.result({ outcome: 'Removed', name }, () => `removed remote ${name}`);
      })(),
    );
  remote
    .command('init [name]')
    .description("create the remote's layerfs schema, or upgrade it to this layerfs's version; with a key, a new remote is encrypted")
    .option('--key-file <path>', 'encrypt the new remote with this key (32 bytes: raw, hex or base64); else LAYERFS_REMOTE_KEY_FILE_<REMOTE> or LAYERFS_REMOTE_KEY_FILE')
    .action((name: string | undefined, o: { keyFile?: string }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.remoteInit(name, { keyFile: o.keyFile }));
        out.result({ outcome: r.from === r.to ? 'UpToDate' : r.from === null ? 'Created' : 'Upgraded', ...r }, () => `${r.remote}: schema version ${r.from ?? 'none'} -> ${r.to}`);
      })(),
    );
  remote
    .command('verify [name]')
    .description("re-hash everything the remote's states reach (stores nothing); exits 1 on damage")
    .option('--key-file <path>', "the remote's encryption key (else LAYERFS_REMOTE_KEY_FILE_<REMOTE> or LAYERFS_REMOTE_KEY_FILE)")
    .action((name: string | undefined, o: { keyFile?: string }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.remoteVerify(name, { keyFile: o.keyFile }), true);
        out.result(r, () => `${r.ok ? 'ok' : 'DAMAGED'}: ${r.remote}: ${r.states} states, ${r.objectsChecked} objects, ${formatBytes(r.bytesChecked)} re-hashed${r.damage ? `; ${r.damage.message}` : ''}`);
        if (!r.ok) state.code = 1;
      })(),
    );
  remote
    .command('refs [name]')
    .description('the remote heads seen at the last fetch or push (readable as REMOTE/NAME)')
    .action((name: string | undefined) =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.remoteRefs(name), true);
        out.result({ refs: rows }, () => rows.map((r) => `${r.ref}\t${r.kind}\t${short(r.head)}\t${r.updatedAt}`));
      })(),
    );
  registerTransferCommands(program, run, state);
}

/** push, fetch and clone: what moves objects and heads between this Store and a remote. */
function registerTransferCommands(program: Command, run: Runner, state: ExitState): void {
  program
    .command('push <remoteOrRef> [ref]')
    .description('push [REMOTE] REF: send a LayerStack (its Layers) or a Branch (its Commits); the remote head moves by compare-and-swap; a stale Branch push reconciles (exit 3 on Conflicted or HeadMoved)')
    .option('--strict', 'answer HeadMoved when the remote head moved, instead of reconciling')
    .option('--key-file <path>', "the remote's encryption key (else LAYERFS_REMOTE_KEY_FILE_<REMOTE> or LAYERFS_REMOTE_KEY_FILE)")
    .action((a: string, b: string | undefined, o: { strict?: boolean; keyFile?: string }) =>
      run(async (out, g) => {
        const [remoteName, ref] = b === undefined ? [undefined, a] : [a, b];
        try {
          const r = await withClient(g.store, (c) => c.push(ref, { remote: remoteName, strict: o.strict, keyFile: o.keyFile }));
          out.result(r, () => pushLines(r));
          if (r.outcome === 'Conflicted') state.code = 3;
        } catch (e) {
          state.code = out.error(e);
          if (e instanceof LayerFsError && e.code === 'ERR_HEAD_MOVED') state.code = 3;
        }
      })(),
    );
  program
    .command('fetch [remote]')
    .description("fetch a remote's objects and heads; its states become readable as REMOTE/NAME")
    .option('--layerstack <name>', 'only this LayerStack (its Layers, Branches and Commits)')
    .option('--key-file <path>', "the remote's encryption key (else LAYERFS_REMOTE_KEY_FILE_<REMOTE> or LAYERFS_REMOTE_KEY_FILE)")
    .action((name: string | undefined, opts: { layerstack?: string; keyFile?: string }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.fetch(name, { layerStack: opts.layerstack, keyFile: opts.keyFile }));
        out.result(r, () => fetchLines(r));
      })(),
    );
  program
    .command('clone <url> <path>')
    .description('a new Store at PATH holding what the remote has (recorded as remote origin)')
    .option('--layerstack <name>', 'only this LayerStack')
    .option('--key-file <path>', "the remote's encryption key (else LAYERFS_REMOTE_KEY_FILE_<REMOTE> or LAYERFS_REMOTE_KEY_FILE)")
    .action((url: string, path: string, opts: { layerstack?: string; keyFile?: string }) =>
      run(async (out) => {
        const { client, result } = await Client.clone(url, path, { layerStack: opts.layerstack, keyFile: opts.keyFile });
        const storePath = client.storePath;
        client.close();
        out.result({ outcome: 'Cloned', store: storePath, ...result }, () => [`cloned into ${storePath}`, ...fetchLines(result)]);
      })(),
    );
}
