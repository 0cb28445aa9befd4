// The benchmark campaign runner: `npm run bench [-- options]`.
//
//   --quick              small tiers only (100 / 1,000 files, 1–16 MiB), < 2 minutes
//   --only F[,F…]        run only these families (repeatable); --list shows them
//   --tiers N[,N…]       keep only tiers with these values (e.g. --tiers 100000)
//   --tiers F=N[,N…]     for family F only (repeatable; overrides a plain --tiers for F)
//   --report             also write docs/BENCHMARKS.md and docs/bench/*.svg
//   --report-from FILE   redraw the report from a results JSON, run nothing; repeat it to merge
//                        several runs (e.g. small tiers, then the large ones) into one report
//   --reps N             run each cell N times, keep the median-time run (default 1); the
//                        machine is shared, so use 3+ when comparing small differences
//   --keep-tmp           keep each cell's scratch directory (for debugging)
//   --tsx                run cells through tsx instead of precompiling them (lib/compile.ts)
//
// Exit status 1 when any cell failed (CI runs `--quick`, so the campaign cannot rot silently).
// Families are discovered in bench/families/; each cell runs as a child process (lib/run-cell.ts).
// Tables go to stdout, progress to stderr, results to bench/.out/results-<timestamp>.json.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadFamilies } from './lib/families.js';
import { fmtMs } from './lib/format.js';
import { machineInfo } from './lib/machine.js';
import { OUT_DIR, REPO_ROOT } from './lib/paths.js';
import { compileCells, type CompiledCells } from './lib/compile.js';
import { runCell } from './lib/run-cell.js';
import { firstLine, renderText, standardTable, TEXT_WIDTH, wrapText } from './lib/table.js';
import type { FixtureNote, Results } from './lib/results.js';
import type { Family, Row, RunContext } from './lib/types.js';
import { writeReport } from './report/markdown.js';

const { values: opt } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string', multiple: true },
    tiers: { type: 'string', multiple: true },
    report: { type: 'boolean', default: false },
    'report-from': { type: 'string', multiple: true },
    'keep-tmp': { type: 'boolean', default: false },
    tsx: { type: 'boolean', default: false },
    reps: { type: 'string', default: '1' },
    list: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const log = (msg: string) => process.stderr.write(msg + '\n');

/** The terms the tables share, printed once per run; each family's own terms are in its description. */
const GLOSSARY = [
  'tier: the size of the workload (files, MiB, variants); tool: layerfs or the peer it is compared with (git, tar).',
  'time: wall time of the timed step (median over --reps); ×git, ×tar: this row\'s time over the peer\'s at the same tier (below 1× is faster).',
  'stored: bytes the tool keeps on disk for the data; objects: stored objects (layerfs) or git objects; peak RSS: the cell process\'s largest resident set.',
  '"semantic": a receipt\'s bytesInserted, the canonical bytes of new objects; "pages": its allocatedGrowth, the SQLite pages newly in use.',
  'A "-" marks a value a tool does not have; [n] refers to the numbered notes under a table.',
];

let glossaryPrinted = false;

function printTable(f: Family | undefined, name: string, rows: Row[]): void {
  if (!glossaryPrinted) {
    glossaryPrinted = true;
    process.stdout.write(`\nTerms used in the tables below:\n${GLOSSARY.map((l) => wrapText(`- ${l}`, TEXT_WIDTH, '  ')).join('\n')}\n`);
  }
  const table = f?.table ? f.table(rows) : standardTable(rows, f?.peers ?? []);
  const about = f?.description ? `${wrapText(f.description, TEXT_WIDTH, '')}\n\n` : '';
  process.stdout.write(`\n== ${f?.title ?? name} (${name}) ==\n${about}${renderText(table)}\n`);
}

/** Runs a cell `reps` times; returns the median-time successful run (or the first failure),
 * with every run's time in extra.repsMs. */
function runRepeated(once: () => Row, reps: number): Row {
  if (reps === 1) return once();
  const runs: Row[] = [];
  for (let i = 0; i < reps; i++) {
    const r = once();
    if (r.status !== 'ok') return r;
    runs.push(r);
  }
  const sorted = [...runs].sort((a, b) => (a.ms ?? 0) - (b.ms ?? 0));
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  return { ...median, extra: { ...median.extra, repsMs: runs.map((r) => r.ms) } };
}

/** Several runs as one: rows and fixtures together, the first run's machine, the whole time span. */
function mergeResults(runs: Results[]): Results {
  if (runs.length === 1) return runs[0]!;
  const [first] = runs;
  const fixtures: FixtureNote[] = [];
  for (const f of runs.flatMap((r) => r.fixtures)) if (!fixtures.some((x) => x.dir === f.dir)) fixtures.push(f);
  return {
    ...first!,
    startedAt: runs.map((r) => r.startedAt).sort()[0]!,
    finishedAt: runs.map((r) => r.finishedAt).sort().reverse()[0]!,
    quick: runs.every((r) => r.quick),
    argv: runs.flatMap((r, i) => (i === 0 ? r.argv : ['+', ...r.argv])),
    fixtures,
    rows: runs.flatMap((r) => r.rows),
  };
}

async function report(results: Results, families: Family[]): Promise<void> {
  const out = await writeReport(results, families);
  log(`report: ${path.relative(REPO_ROOT, out.file)} (${out.charts.length} charts)`);
  if (out.note) log(`note: ${out.note}`);
}

/** --only and --tiers as given: the families to run and the tiers to keep of each. */
interface Selection {
  selected: Family[];
  only: string[] | null;
  tierFilter?: number[];
  familyTiers: Map<string, number[]>;
}

/** The families and tiers the options select, or the names --only gave that no family has. */
function select(families: Family[]): Selection | { unknown: string[] } {
  const only = opt.only?.flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== '') ?? null;
  const unknown = only?.filter((n) => !families.some((f) => f.name === n)) ?? [];
  if (unknown.length > 0) return { unknown };
  const values = (list: string) => list.split(',').map((s) => Number(s.trim().replace(/_/g, '')));
  let tierFilter: number[] | undefined;
  const familyTiers = new Map<string, number[]>();
  for (const spec of opt.tiers ?? []) {
    const eq = spec.indexOf('=');
    if (eq < 0) tierFilter = values(spec);
    else familyTiers.set(spec.slice(0, eq).trim(), values(spec.slice(eq + 1)));
  }
  return { selected: families.filter((f) => only === null || only.includes(f.name)), only, tierFilter, familyTiers };
}

/** What every family of one run shares. */
interface Campaign {
  quick: boolean;
  reps: number;
  timeoutMs: number;
  compiled?: CompiledCells;
  fixtures: FixtureNote[];
}

function contextFor(fam: Family, run: Campaign): RunContext {
  return {
    quick: run.quick,
    log,
    runCell: (req) => {
      const row = runRepeated(() => runCell(req, { family: fam.name, timeoutMs: run.timeoutMs, keepTmp: opt['keep-tmp']!, compiled: run.compiled }), run.reps);
      const what = row.status === 'ok' ? fmtMs(row.ms) : `${row.status}: ${firstLine(row.message, 100)}`;
      const wall = row.extra.cellWallMs;
      log(`  ${fam.name} ${req.tier.label} ${row.tool}: ${what}${typeof wall === 'number' ? ` (cell ${fmtMs(wall)})` : ''}`);
      return row;
    },
    noteFixture: (f) => {
      if (!run.fixtures.some((x) => x.dir === f.dir)) run.fixtures.push(f);
    },
  };
}

/** One family's rows at its selected tiers; a tier that throws (fixture generation, warm-up)
 * still yields a row, not a crash. */
async function runFamily(fam: Family, sel: Selection, run: Campaign): Promise<Row[]> {
  const ctx = contextFor(fam, run);
  const keep = sel.familyTiers.get(fam.name) ?? sel.tierFilter;
  const tiers = fam.tiers(run.quick).filter((t) => keep === undefined || keep.includes(t.value));
  log(`${fam.name}: ${tiers.map((t) => t.label).join(' / ') || '(no tier selected)'}`);
  const rows: Row[] = [];
  for (const tier of tiers) {
    try {
      rows.push(...(await fam.run(tier, ctx)));
    } catch (err) {
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      rows.push({ family: fam.name, tier: tier.label, tierValue: tier.value, tierUnit: tier.unit, tool: '(family)', cell: fam.name, status: 'error', message, extra: {} });
    }
  }
  printTable(fam, fam.name, rows);
  return rows;
}

/** Runs the selected families on cells compiled once (unless --tsx); prints the failures. */
async function runCampaign(sel: Selection, run: Omit<Campaign, 'compiled'>): Promise<Row[]> {
  const t0 = performance.now();
  const compiled = opt.tsx ? undefined : await compileCells();
  if (compiled) log(`cells compiled to JS in ${fmtMs(compiled.ms)}`);
  // Interrupted runs remove the compiled copy too (a finally block does not run on a signal).
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      compiled?.remove();
      process.exit(128 + (sig === 'SIGINT' ? 2 : 15));
    });
  }
  const rows: Row[] = [];
  try {
    for (const fam of sel.selected) rows.push(...(await runFamily(fam, sel, { ...run, compiled })));
  } finally {
    compiled?.remove();
  }
  const failed = rows.filter((r) => r.status === 'error');
  log(`\n${rows.length} cells in ${fmtMs(performance.now() - t0)}; ${failed.length} failed${failed.map((r) => `\n  FAILED ${r.family} ${r.tier} ${r.tool}: ${firstLine(r.message, 300)}`).join('')}`);
  return rows;
}

function writeResults(results: Results): void {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const file = path.join(OUT_DIR, `results-${results.startedAt.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
  log(`\nresults: ${path.relative(REPO_ROOT, file)}`);
}

/** --report-from: redraw tables and the report from earlier results, run nothing. */
async function reportFrom(files: string[], families: Family[]): Promise<void> {
  const results = mergeResults(files.map((f) => JSON.parse(fs.readFileSync(f, 'utf8')) as Results));
  for (const name of new Set(results.rows.map((r) => r.family))) {
    printTable(families.find((f) => f.name === name), name, results.rows.filter((r) => r.family === name));
  }
  await report(results, families);
}

async function main(): Promise<number> {
  if (opt.help) {
    const head = fs.readFileSync(new URL(import.meta.url), 'utf8').split('\n').slice(0, 13);
    log(head.map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
    return 0;
  }
  const families = await loadFamilies();
  if (opt.list) {
    for (const f of families) log(`${f.name.padEnd(24)} ${f.title}`);
    return 0;
  }
  if (opt['report-from'] !== undefined) {
    await reportFrom(opt['report-from'], families);
    return 0;
  }
  const sel = select(families);
  if ('unknown' in sel) {
    log(`unknown famil${sel.unknown.length > 1 ? 'ies' : 'y'}: ${sel.unknown.join(', ')} (known: ${families.map((f) => f.name).join(', ')})`);
    return 2;
  }
  const quick = opt.quick!;
  const startedAt = new Date().toISOString();
  const loadAvgAtStart = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const fixtures: FixtureNote[] = [];
  // Generous per-cell limit: a hung cell must not hang the campaign.
  const timeoutMs = (quick ? 5 : 60) * 60_000;
  const reps = Math.max(1, Math.floor(Number(opt.reps)) || 1);
  const rows = await runCampaign(sel, { quick, reps, timeoutMs, fixtures });
  const results: Results = { version: 1, startedAt, finishedAt: new Date().toISOString(), quick, only: sel.only, argv: process.argv.slice(2), machine: machineInfo(), loadAvgAtStart, fixtures, rows };
  writeResults(results);
  if (opt.report) await report(results, families);
  return rows.some((r) => r.status === 'error') ? 1 : 0;
}

process.exitCode = await main();
