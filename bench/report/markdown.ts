// docs/BENCHMARKS.md from a Results record: machine, method, then per family its description,
// table and charts (SVG files in docs/bench/, referenced relatively).

import fs from 'node:fs';
import path from 'node:path';
import { DOCS_DIR } from '../lib/paths.js';
import { fmtBytes, fmtInt } from '../lib/format.js';
import { renderMarkdown, standardTable } from '../lib/table.js';
import type { Results } from '../lib/results.js';
import type { Family } from '../lib/types.js';
import { loadVega, planCharts, renderSvg, type ChartHooks } from './charts.js';
import { headlineMarkdown } from './headline.js';
import { GENERATED_END, keptSections } from './kept-sections.js';

export interface ReportOutcome {
  file: string;
  charts: string[];
  /** Why charts are missing, if they are. */
  note?: string;
}

function machineSection(r: Results): string {
  const m = r.machine;
  return [
    '| | |',
    '| :--- | :--- |',
    `| CPU | ${m.cpu} |`,
    `| cores | ${m.cores} |`,
    `| memory | ${m.memoryGiB} GiB |`,
    `| OS | ${m.os} |`,
    `| scratch filesystem | ${m.tmpFs} |`,
    `| Node | ${m.node} |`,
    `| peers | ${m.git}; ${m.tar} |`,
    `| run | ${r.startedAt} → ${r.finishedAt}${r.quick ? ' (quick)' : ''} |`,
    `| load average (1/5/15 min) | start ${(r.loadAvgAtStart ?? []).join(' / ')}; end ${(m.loadAvg ?? []).join(' / ')} |`,
  ].join('\n');
}

function fixtureSection(r: Results): string {
  if (r.fixtures.length === 0) return '';
  const lines = r.fixtures.map((f) => {
    const m = f.manifest as { files?: number; dirs?: number; bytes?: number; generateMs?: number };
    const gen = m.generateMs !== undefined ? `, generated in ${(m.generateMs / 1000).toFixed(1)} s` : '';
    return `| ${f.name} | ${fmtInt(m.files)} | ${fmtInt(m.dirs)} | ${fmtBytes(m.bytes)}${gen} |`;
  });
  return ['| fixture | files | directories (below the root) | bytes |', '| :--- | ---: | ---: | ---: |', ...lines].join('\n');
}

const METHOD = `- Every measurement ("cell") is a separate child process (\`node X.js\`: the cells are compiled to JS
  with esbuild once per run, \`bench/lib/compile.ts\`) working in a fresh scratch directory under the
  OS temp dir, removed afterwards.
- **Warm cache.** Page caches are not dropped (that is a machine-wide side effect); instead the
  input is read once with \`tar cf - DIR | cat >/dev/null\` right before each cell.
- Time is wall-clock around the operation. In the import families, layerfs: \`Client.create\` +
  \`initLayerStack\` (close is reported apart as \`closeMs\` in the JSON); git: \`git init && git add -A
  && git commit\` with \`GIT_DIR\` outside the fixture, auto-gc off; tar: \`tar cf - DIR | cat >/dev/null\`.
  Every other family says in its own section which step is timed; setup (imports, copies, checkouts)
  is timed apart or not at all, and edits applied to a Workspace are never part of a commit's time.
- Peak RSS: \`process.resourceUsage().maxRSS\` of the cell process for layerfs (it includes Node,
  ≈40–75 MiB; the JSON has \`baselineRssMiB\`), GNU \`time\` %M (largest process) for git and tar
  where git runs under \`time\`; "—" where a cell runs git without measuring it.
- \`×git\`, \`×tar\`: this row's time divided by the peer's time at the same tier (below 1× is faster).
- Sizes in decimal units (MB = 10⁶ B); memory in MiB. Fixtures are deterministic (seeded) and cached
  in \`bench/.fixtures/\`; see \`bench/fixtures/layout.ts\` and \`bench/fixtures/dedup.ts\`.
- Growth of a layerfs Store is reported twice: **semantic** (the receipt's \`bytesInserted\`: canonical
  bytes of the new objects the state needed) and **pages** (the receipt's \`allocatedGrowth\`: SQLite
  pages in use, measured inside the operation's own write transaction; free pages can absorb new
  objects, so it can be 0). git's growth is \`du -sb .git\`.
- The machine is shared (2 cores, other builds and tests running): figures are single runs unless
  the results JSON has \`repsMs\` (\`--reps N\` keeps the median run); compare ratios of the same run.`;

/**
 * Says plainly when this run is not the full campaign (quick, or tiers left out), listing per
 * family the tiers that ran beside the full campaign's, so no reader takes it for the full run.
 */
function scopeNote(r: Results, families: Family[]): string {
  const args = r.argv.length > 0 ? ` (\`npm run bench -- ${r.argv.join(' ')}\`)` : '';
  const lines: string[] = [];
  for (const f of families) {
    const ran = [...new Set(r.rows.filter((row) => row.family === f.name).map((row) => row.tier))];
    const full = f.tiers(false).map((t) => t.label);
    const missing = full.filter((t) => !ran.includes(t));
    if (missing.length === 0 && !r.quick) continue;
    lines.push(`| ${f.name} | ${ran.join(' / ') || 'not run'} | ${full.join(' / ')} |`);
  }
  if (lines.length === 0) return '';
  return [
    `**This is not the full campaign**${args}: ${r.quick ? 'quick tiers only. ' : ''}The full run (100,000 files, ` +
      '500 MiB–1 GiB files, hundreds of variants) takes far longer than the time this run had on a ' +
      'shared, loaded 2-core machine, so the largest tiers were left out where listed below; the ' +
      'headline takes each family\'s largest tier *of this run*. Rerun `npm run bench -- --report` ' +
      'for the full figures.',
    '',
    '| family | tiers in this run | tiers of the full campaign |',
    '| :--- | :--- | :--- |',
    ...lines,
  ].join('\n');
}

export async function writeReport(results: Results, families: Family[]): Promise<ReportOutcome> {
  const chartDir = path.join(DOCS_DIR, 'bench');
  const vega = await loadVega();
  const note = typeof vega === 'string' ? `Charts omitted: ${vega}.` : undefined;
  const charts: string[] = [];
  const sections: string[] = [];
  const byName = new Map(families.map((f) => [f.name, f]));
  const names = [...new Set(results.rows.map((r) => r.family))];
  const headingOf = (name: string): string => `## ${byName.get(name)?.title ?? name} (\`${name}\`)`;
  const file = path.join(DOCS_DIR, 'BENCHMARKS.md');
  // Measurements recorded by hand, and the sections of families this run left out, stay.
  const kept = keptSections(
    fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '',
    new Set(names.map(headingOf)),
    new Set(families.map((f) => headingOf(f.name))),
    new Set(['## Headline', '## Machine', '## Method']),
  );
  for (const name of names) {
    const rows = results.rows.filter((r) => r.family === name);
    const fam = byName.get(name);
    const table = fam?.table ? fam.table(rows) : standardTable(rows, fam?.peers ?? []);
    const parts = [headingOf(name), fam?.description ?? '', renderMarkdown(table)];
    if (typeof vega !== 'string' && fam?.charts !== false) {
      fs.mkdirSync(chartDir, { recursive: true });
      for (const plan of planCharts(name, fam?.title ?? name, rows, (fam as (Family & ChartHooks) | undefined)?.chartDefs)) {
        const svg = path.join(chartDir, `${plan.stem}.svg`);
        fs.writeFileSync(svg, await renderSvg(vega, plan.spec));
        charts.push(svg);
        parts.push(`![${plan.alt}](bench/${plan.stem}.svg)`);
      }
    }
    parts.push(GENERATED_END, kept.within.get(headingOf(name)) ?? '');
    sections.push(parts.filter((p) => p !== '').join('\n\n'));
  }
  const headline = headlineMarkdown(results);
  const doc = [
    '# Benchmarks',
    `The headline, the machine, the method and each family's table are generated by \`npm run bench -- --report\` (bench/run.ts); rerun it rather than editing them. ` +
      `Measurements recorded by hand follow them, dated, after a family's table or in sections of their own: a rerun keeps them, and keeps the sections of families it did not run.` +
      (results.only ? ` This run covered: ${results.only.join(', ')}.` : ''),
    scopeNote(results, families),
    ...(headline ? ['## Headline', headline, 'Each figure comes from the family named on its row, at the largest tier of this run; details, every cell and charts below.'] : []),
    '## Machine',
    machineSection(results),
    '## Method',
    METHOD,
    ...(results.fixtures.length > 0 ? ['### Fixtures', fixtureSection(results)] : []),
    ...(note ? [`> ${note}`] : []),
    ...sections,
    ...kept.after,
  ].filter((s) => s !== '');
  fs.mkdirSync(DOCS_DIR, { recursive: true });
  fs.writeFileSync(file, doc.join('\n\n') + '\n');
  return { file, charts, ...(note ? { note } : {}) };
}
