// Family bring_back: `diff --patch` against `git diff` of the same two releases, and an online
// `db backup` against `cp` of the stopped Store file.

import { countLabel, DASH, fmtBytes, fmtMs } from '../lib/format.js';
import { firstLine } from '../lib/table.js';
import { ensureLargeFile, ensureTree } from '../fixtures/tree.js';
import type { Family, Row, Table } from '../lib/types.js';
import { useFixture } from '../lib/use-fixture.js';
import { bringBack } from '../cells/bring_back.js';

function num(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}

const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b ? `${(a / b).toFixed(2)}×` : DASH);

const family: Family = {
  name: 'bring_back',
  title: 'Bringing work back: diff --patch and db backup',
  description:
    'diff: the init fixture tree (10,000 files; 1,000 quick) as release 1, and release 2 with mixed edits to 5 % of ' +
    'the files, 1 % deleted, 1 % added, 0.5 % renamed — imported as a Layer plus a Commit, and committed twice ' +
    'in git. "layerfs" is `Client.diffPatch(layer, branch)` in process (git patch text, binary files summarised); ' +
    '"git" is `git diff -M HEAD~1 HEAD` to /dev/null (process included); best of 3. backup: a Store holding the ' +
    'large-file fixture (1 GiB of random bytes; 32 MiB quick), closed; "cp" copies the stopped file (after ' +
    '`sync`); "backup" is `Client.backup` — SQLite backup API ("copy") then the verification of every state of ' +
    'the copy ("verify"); best of 2.',
  order: 90,
  charts: false,
  tiers: (quick) => [
    { label: countLabel(quick ? 1_000 : 10_000), value: quick ? 1_000 : 10_000, unit: 'files' },
    { label: quick ? '32 MiB' : '1 GiB', value: quick ? 32 : 1024, unit: 'MiB' },
  ],
  run(tier, ctx) {
    if (tier.unit === 'files') {
      const fx = useFixture(ctx, ensureTree(tier.value));
      return [ctx.runCell({ tier, cell: bringBack, args: { op: 'diff', dir: fx.dir, files: tier.value }, scratch: true })];
    }
    const fx = useFixture(ctx, ensureLargeFile(tier.value));
    return [ctx.runCell({ tier, cell: bringBack, args: { op: 'backup', dir: fx.dir }, scratch: true })];
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = ['tier', 'op', 'layerfs', 'peer', 'peer time', 'ratio', 'more'];
    const out = rows.map((r) => {
      const x = r.extra;
      if (r.status !== 'ok') {
        notes.push(`${r.tier}: ${r.status}: ${firstLine(r.message)}`);
        return [r.tier, DASH, `${r.status} [${notes.length}]`, DASH, DASH, DASH, DASH];
      }
      if (x.op === 'diff') {
        return [r.tier, 'diff --patch', fmtMs(num(x.layerfsMs)), 'git diff', fmtMs(num(x.gitMs)), ratio(num(x.layerfsMs), num(x.gitMs)), `${x.patchFiles} files, ${fmtBytes(num(x.patchBytes))} (git: ${x.gitFiles} files, ${fmtBytes(num(x.gitPatchBytes))})`];
      }
      return [r.tier, 'db backup', fmtMs(num(x.backupMs)), 'cp (stopped)', fmtMs(num(x.cpMs)), ratio(num(x.backupMs), num(x.cpMs)), `Store ${fmtBytes(r.storeBytes)}; copy ${fmtMs(num(x.copyMs))}, verify ${fmtMs(num(x.verifyMs))}`];
    });
    return { headers, align: ['l', 'l', 'r', 'l', 'r', 'r', 'l'], rows: out, notes };
  },
};

export default family;
