import { writeFileSync } from 'node:fs';
import { round, rssMiB } from './stats.js';

/** A target from the project's issues: the figure must be `>=` or `<=` the value. */
export interface Target {
  op: '>=' | '<=';
  value: number;
}

/** One printed figure. */
export interface Figure {
  bench: string;
  /** What was measured against (log adapter, batch size, endpoint…). */
  variant: string;
  metric: string;
  value: number;
  unit: string;
  target?: Target;
  /** Set when a figure could not be measured the intended way (e.g. the api app was missing). */
  note?: string;
}

/** The figure maker of one bench and variant: `fig(metric, value, unit, target?)`. */
export const figureMaker =
  (bench: string, variant: string) =>
  (metric: string, value: number, unit: string, target?: Target): Figure => ({
    bench,
    variant,
    metric,
    value,
    unit,
    ...(target ? { target } : {}),
  });

/** What one bench process hands back to the runner. */
export interface BenchResult {
  bench: string;
  figures: Figure[];
  /** Free-form extra figures kept in the JSON summary (per-variant details, settings). */
  details: Record<string, unknown>;
  /** RSS of the bench process at its end, MiB. */
  rssMiB: number;
  /** Wall time of the whole bench including setup, ms. */
  wallMs: number;
}

/** The details with the process's peak RSS so far, MiB (`maxRssMiB`). */
export const withPeakRss = (details: Record<string, unknown>): Record<string, unknown> => ({
  ...details,
  maxRssMiB: round(process.resourceUsage().maxRSS / 1024, 1),
});

/** Hands back the result of a bench that started at `started` (`performance.now()`): the RSS now and the wall time (whole ms) added. */
export function emitMeasured(
  bench: string,
  figures: Figure[],
  details: Record<string, unknown>,
  started: number,
): void {
  emitResult({ bench, figures, details, rssMiB: rssMiB(), wallMs: Math.round(performance.now() - started) });
}

export function meets(value: number, target: Target): boolean {
  return target.op === '>=' ? value >= target.value : value <= target.value;
}

const fmt = (x: number): string => {
  if (!Number.isFinite(x)) return String(x);
  if (Math.abs(x) >= 1000) return Math.round(x).toLocaleString('en-US');
  if (Math.abs(x) >= 100) return x.toFixed(0);
  if (Math.abs(x) >= 10) return x.toFixed(1);
  return x.toFixed(2);
};

/** A plain-text table of every figure, with the target and whether it is met. */
export function formatTable(figures: readonly Figure[]): string {
  const header = ['bench', 'variant', 'metric', 'value', 'target', ''];
  const rows = figures.map((f) => [
    f.bench,
    f.variant,
    f.metric,
    `${fmt(f.value)} ${f.unit}`,
    f.target ? `${f.target.op} ${fmt(f.target.value)} ${f.unit}` : '',
    f.target ? (meets(f.value, f.target) ? 'ok' : 'MISSED') : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Called by a bench process: hands its result to the runner (a file path given as `--out`). */
export function emitResult(result: BenchResult): void {
  const at = process.argv.indexOf('--out');
  const path = at >= 0 ? process.argv[at + 1] : undefined;
  if (path) writeFileSync(path, JSON.stringify(result, null, 2));
  else console.log(formatTable(result.figures));
}
