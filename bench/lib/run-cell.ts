// Runs a cell as a child process (`node X.js …` precompiled by lib/compile.ts, or
// `node --import tsx bench/cells/X.ts …` without it) in its own scratch
// directory, and converts the one JSON line it prints into a Row. Whatever happens — missing
// module, crash, timeout, garbage on stdout — the result is a Row with status "error", so one
// broken cell never stops a campaign.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeArgsFor } from './compile.js';
import { cellArgv, withPeers, type CellOptions } from './define-cell.js';
import { CELLS_DIR, REPO_ROOT } from './paths.js';
import type { CellRequest, Row, RunContext } from './types.js';

export interface RunCellOptions {
  family: string;
  timeoutMs: number;
  keepTmp: boolean;
  /** Precompiled cells (lib/compile.ts); without them cells run through tsx. */
  compiled?: { cellsDir: string; env: NodeJS.ProcessEnv };
}

/** Keys of a cell's JSON line that map onto Row fields; the rest goes to Row.extra. */
const ROW_KEYS = ['ms', 'maxRssMiB', 'files', 'bytes', 'storeBytes', 'objects', 'value'] as const;

function lastJsonLine(stdout: string): Record<string, unknown> | undefined {
  const lines = stdout.split('\n').filter((l) => l.trim().startsWith('{'));
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      const v: unknown = JSON.parse(lines[i]!);
      if (v !== null && typeof v === 'object' && 'cell' in v) return v as Record<string, unknown>;
    } catch {
      // not our line; keep looking
    }
  }
  return undefined;
}

function tail(s: string, n = 1500): string {
  return s.length > n ? '…' + s.slice(-n) : s;
}

/** The cell's file: its TypeScript source, or its precompiled JS in the mirror (lib/compile.ts). */
function cellFile(req: CellRequest, opts: RunCellOptions): string {
  const source = fileURLToPath(req.cell.file);
  if (!opts.compiled) return source;
  const rel = path.relative(CELLS_DIR, source);
  return path.join(opts.compiled.cellsDir, rel.replace(/\.ts$/, '.js'));
}

export function runCell<O extends CellOptions>(req: CellRequest<O>, opts: RunCellOptions): Row {
  const base: Row = {
    family: opts.family,
    tier: req.tier.label,
    tierValue: req.tier.value,
    tierUnit: req.tier.unit,
    tool: req.tool ?? req.cell.tool,
    cell: req.cell.id,
    status: 'error',
    extra: {},
  };
  const scratch = req.scratch === false ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), `layerfs-bench-${base.cell}-`));
  try {
    const file = cellFile(req as unknown as CellRequest, opts);
    const args = [
      ...nodeArgsFor(file),
      ...cellArgv(req.cell as unknown as CellRequest['cell'], req.args),
      '--tier',
      req.tier.label,
      ...(scratch !== undefined ? ['--tmp', scratch] : []),
    ];
    const t0 = performance.now();
    const r = spawnSync(process.execPath, args, {
      cwd: REPO_ROOT,
      env: opts.compiled?.env ?? process.env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: opts.timeoutMs,
      killSignal: 'SIGKILL',
      maxBuffer: 256 * 1024 * 1024,
    });
    // The whole child process, start-up and setup included: what a campaign's run time is made of.
    base.extra.cellWallMs = Math.round(performance.now() - t0);
    if (r.error !== undefined && (r.error as NodeJS.ErrnoException).code === 'ETIMEDOUT') {
      return { ...base, message: `timed out after ${Math.round(opts.timeoutMs / 1000)} s` };
    }
    if (r.error !== undefined) return { ...base, message: r.error.message };
    const line = lastJsonLine(r.stdout);
    if (line === undefined) {
      const how = r.signal !== null ? `killed by ${r.signal}` : `exit ${r.status}`;
      return { ...base, message: `${how}, no JSON line; stderr: ${tail(r.stderr)}` };
    }
    const row: Row = { ...base, status: 'ok', extra: { ...base.extra } };
    for (const [k, v] of Object.entries(line)) {
      if (k === 'cell' || k === 'tier') continue;
      if (k === 'error') {
        row.status = 'error';
        row.message = String(v);
      } else if (k === 'skipped') {
        row.status = 'skipped';
        row.message = String(v);
      } else if ((ROW_KEYS as readonly string[]).includes(k) && typeof v === 'number') {
        row[k as (typeof ROW_KEYS)[number]] = v;
      } else if (v !== undefined && v !== null) {
        row.extra[k] = v;
      }
    }
    if (row.status === 'ok' && r.status !== 0) {
      row.status = 'error';
      row.message = `exit ${r.status} after printing a result; stderr: ${tail(r.stderr)}`;
    }
    return row;
  } finally {
    if (scratch !== undefined && !opts.keepTmp) fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/** The cell, then each of its peers with the same arguments, each after `before` (e.g. warming
 * the page cache); one row each. */
export function runWithPeers<O extends CellOptions>(ctx: RunContext, req: CellRequest<O>, before?: () => void): Row[] {
  return withPeers(req.cell as unknown as CellRequest['cell']).map((cell) => {
    before?.();
    return ctx.runCell({ ...(req as unknown as CellRequest), cell, tool: cell === (req.cell as unknown) ? req.tool : undefined });
  });
}
