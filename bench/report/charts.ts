// SVG charts of cost vs tier, drawn with Vega (https://vega.github.io) in headless mode
// (renderer 'none' + toSVG: no browser, no canvas). Vega is an optional dependency of the
// harness: it is imported by a computed name, and when it is missing the report is written
// without charts. Plain Vega specs are used rather than Vega-Lite, whose current major needs Node 22.

import type { Row } from '../lib/types.js';

interface VegaView {
  toSVG(): Promise<string>;
  finalize(): void;
}
interface VegaModule {
  parse(spec: unknown): unknown;
  View: new (runtime: unknown, opts: { renderer: string }) => VegaView;
}

/** The loaded module, or the reason it could not be loaded. */
export async function loadVega(): Promise<VegaModule | string> {
  const name = 'vega';
  try {
    const mod = (await import(name)) as Partial<VegaModule> & { default?: Partial<VegaModule> };
    const v = typeof mod.parse === 'function' ? mod : mod.default;
    if (typeof v?.parse !== 'function' || v.View === undefined) return 'the module "vega" has no parse/View';
    return v as VegaModule;
  } catch (err) {
    return `the npm package "vega" is not installed (${(err as Error).message.split('\n')[0]})`;
  }
}

export interface Point {
  x: number;
  y: number;
  series: string;
}

const COMMON = {
  $schema: 'https://vega.github.io/schema/vega/v5.json',
  width: 480,
  height: 280,
  padding: 8,
  background: 'white',
  config: { axis: { labelFontSize: 11, titleFontSize: 12 }, title: { fontSize: 14 } },
};

/** Ten distinct colours suffice for most charts; more series get twenty. */
function palette(points: Point[]): unknown {
  return new Set(points.map((p) => p.series)).size > 10 ? { scheme: 'tableau20' } : 'category';
}

/** Log–log lines, one per series (tool): how cost grows with the tier. */
export function lineSpec(title: string, xTitle: string, yTitle: string, points: Point[], legend = 'tool'): unknown {
  const values = [...points].sort((a, b) => a.x - b.x);
  const xs = [...new Set(values.map((p) => p.x))];
  return {
    ...COMMON,
    title: { text: title },
    data: [{ name: 'table', values }],
    scales: [
      { name: 'x', type: 'log', domain: { data: 'table', field: 'x' }, range: 'width', padding: 12 },
      { name: 'y', type: 'log', domain: { data: 'table', field: 'y' }, range: 'height', nice: true },
      { name: 'color', type: 'ordinal', domain: { data: 'table', field: 'series' }, range: palette(values) },
    ],
    axes: [
      { orient: 'bottom', scale: 'x', title: xTitle, values: xs, format: ',' },
      { orient: 'left', scale: 'y', title: yTitle, grid: true, format: '~s', tickCount: 6 },
    ],
    legends: [{ stroke: 'color', fill: 'color', title: legend, symbolType: 'circle', labelLimit: 320 }],
    marks: [
      {
        type: 'group',
        from: { facet: { name: 'series', data: 'table', groupby: 'series' } },
        marks: [
          {
            type: 'line',
            from: { data: 'series' },
            encode: {
              enter: {
                x: { scale: 'x', field: 'x' },
                y: { scale: 'y', field: 'y' },
                stroke: { scale: 'color', field: 'series' },
                strokeWidth: { value: 2 },
              },
            },
          },
        ],
      },
      {
        type: 'symbol',
        from: { data: 'table' },
        encode: {
          enter: {
            x: { scale: 'x', field: 'x' },
            y: { scale: 'y', field: 'y' },
            fill: { scale: 'color', field: 'series' },
            size: { value: 36 },
          },
        },
      },
    ],
  };
}

/** Horizontal bars per tool, for a family measured at a single tier. */
export function barSpec(title: string, xTitle: string, points: Point[]): unknown {
  return {
    ...COMMON,
    height: 30 * Math.max(1, points.length),
    title: { text: title },
    data: [{ name: 'table', values: points }],
    scales: [
      { name: 'y', type: 'band', domain: { data: 'table', field: 'series' }, range: 'height', padding: 0.2 },
      { name: 'x', type: 'linear', domain: { data: 'table', field: 'y' }, range: 'width', nice: true, zero: true },
      { name: 'color', type: 'ordinal', domain: { data: 'table', field: 'series' }, range: palette(points) },
    ],
    axes: [
      { orient: 'bottom', scale: 'x', title: xTitle, grid: true, format: '~s', tickCount: 6 },
      { orient: 'left', scale: 'y' },
    ],
    marks: [
      {
        type: 'rect',
        from: { data: 'table' },
        encode: {
          enter: {
            y: { scale: 'y', field: 'series' },
            height: { scale: 'y', band: 1 },
            x: { scale: 'x', value: 0 },
            x2: { scale: 'x', field: 'y' },
            fill: { scale: 'color', field: 'series' },
          },
        },
      },
    ],
  };
}

export async function renderSvg(vega: VegaModule, spec: unknown): Promise<string> {
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

export interface ChartPlan {
  /** File name stem under docs/bench/. */
  stem: string;
  alt: string;
  spec: unknown;
}

/**
 * A chart a family asks for instead of the default three (time, RSS, stored): one metric of its
 * rows against the tier, one line per series. Families declare them as `chartDefs` (ChartHooks).
 */
export interface ChartDef {
  /** File stem suffix: docs/bench/<family>-<stem>.svg. */
  stem: string;
  title: string;
  /** y axis label, with its unit. */
  y: string;
  /** x axis label; default the tier unit. */
  x?: string;
  value?(r: Row): number | undefined;
  /** Several points per row (e.g. a row's figure and its floor); used instead of value. */
  values?(r: Row): { series: string; y: number | undefined }[];
  /** Series name of a row; default its tool. */
  series?(r: Row): string;
  /** Which rows to draw; default every ok row. */
  filter?(r: Row): boolean;
  /** Legend title; default "series". */
  legend?: string;
  /** Several rows giving the same (series, tier): keep their median (default: keep all). */
  median?: boolean;
}

function medianPoints(points: Point[]): Point[] {
  const groups = new Map<string, Point[]>();
  for (const p of points) {
    const k = `${p.series}\u0000${p.x}`;
    groups.set(k, [...(groups.get(k) ?? []), p]);
  }
  return [...groups.values()].map((g) => {
    const ys = g.map((p) => p.y).sort((a, b) => a - b);
    const m = Math.floor(ys.length / 2);
    return { ...g[0]!, y: ys.length % 2 ? ys[m]! : (ys[m - 1]! + ys[m]!) / 2 };
  });
}

export interface ChartHooks {
  chartDefs?: ChartDef[];
}

export function planDefinedCharts(family: string, title: string, rows: Row[], defs: ChartDef[]): ChartPlan[] {
  const ok = rows.filter((r) => r.status === 'ok');
  const plans: ChartPlan[] = [];
  for (const d of defs) {
    const raw = ok
      .filter((r) => d.filter?.(r) ?? true)
      .flatMap((r) => (d.values ? d.values(r) : [{ y: d.value?.(r), series: d.series?.(r) ?? r.tool }]).map((p) => ({ x: r.tierValue, ...p })))
      .filter((p): p is Point => typeof p.y === 'number' && Number.isFinite(p.y) && p.y > 0);
    const points = d.median ? medianPoints(raw) : raw;
    if (points.length === 0) continue;
    const unit = d.x ?? ok[0]!.tierUnit;
    const stem = `${family}-${d.stem}`;
    if (new Set(points.map((p) => p.x)).size >= 2) {
      plans.push({ stem, alt: `${title}: ${d.title}, ${d.y} vs ${unit}`, spec: lineSpec(d.title, unit, d.y, points, d.legend ?? 'series') });
    } else {
      plans.push({ stem, alt: `${title}: ${d.title} (${d.y})`, spec: barSpec(d.title, d.y, points) });
    }
  }
  return plans;
}

/** The charts of one family: time, peak RSS and stored bytes against the tier. */
export function planCharts(family: string, title: string, rows: Row[], defs?: ChartDef[]): ChartPlan[] {
  if (defs !== undefined) return planDefinedCharts(family, title, rows, defs);
  const ok = rows.filter((r) => r.status === 'ok');
  if (ok.length === 0) return [];
  const tiers = new Set(ok.map((r) => r.tierValue));
  const unit = ok[0]!.tierUnit;
  const metrics: { key: 'ms' | 'maxRssMiB' | 'storeBytes'; stem: string; label: string }[] = [
    { key: 'ms', stem: 'time', label: 'wall time (ms)' },
    { key: 'maxRssMiB', stem: 'rss', label: 'peak RSS (MiB)' },
    { key: 'storeBytes', stem: 'stored', label: 'stored bytes' },
  ];
  const plans: ChartPlan[] = [];
  for (const m of metrics) {
    const points = ok
      .filter((r) => typeof r[m.key] === 'number' && r[m.key]! > 0)
      .map((r) => ({ x: r.tierValue, y: r[m.key]!, series: r.tool }));
    if (points.length === 0) continue;
    const stem = `${family}-${m.stem}`;
    if (tiers.size >= 2) {
      plans.push({ stem, alt: `${title}: ${m.label} vs ${unit}`, spec: lineSpec(`${title}: ${m.label}`, unit, m.label, points) });
    } else {
      const t = ok[0]!.tier;
      plans.push({ stem, alt: `${title} (${t}): ${m.label}`, spec: barSpec(`${title} (${t})`, m.label, points) });
    }
  }
  return plans;
}
