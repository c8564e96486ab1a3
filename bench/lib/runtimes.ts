/**
 * One bench on several node binaries in one run (`--nodes` / BENCH_NODES, e.g. Node 20 against
 * Node 24): the runs interleaved round by round, each node's figures the median of its rounds, and
 * the last node's over the first's, with the ratio of each round beside it to show the noise.
 */
import { type Figure, formatTable } from './report.js';

export interface Runtime {
  path: string;
  /** `node --version` (the path too when two binaries report the same version). */
  label: string;
}

/** Runtimes of these `paths` labelled by the versions they report. */
export function labelRuntimes(runtimes: readonly { path: string; version: string }[]): Runtime[] {
  const counts = new Map<string, number>();
  for (const r of runtimes) counts.set(r.version, (counts.get(r.version) ?? 0) + 1);
  return runtimes.map((r) => ({
    path: r.path,
    label: (counts.get(r.version) ?? 0) > 1 ? `${r.version} (${r.path})` : r.version,
  }));
}

export interface PlannedRun<R> {
  round: number;
  /** Index of the runtime in the list given. */
  index: number;
  runtime: R;
}

/**
 * The runs of one bench: `rounds` rounds, each running every runtime once; odd rounds in the
 * reverse order (A B, B A, A B…), so that a load rising or falling through the run falls on each
 * runtime alike, and neither always runs first (the first run of a pair warms the page cache,
 * Postgres' buffers and the broker for the second).
 */
export function interleavedRuns<R>(runtimes: readonly R[], rounds: number): PlannedRun<R>[] {
  const out: PlannedRun<R>[] = [];
  for (let round = 0; round < rounds; round++) {
    const order = runtimes.map((runtime, index) => ({ round, index, runtime }));
    if (round % 2 === 1) order.reverse();
    out.push(...order);
  }
  return out;
}

/** The median (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const keyOf = (f: Pick<Figure, 'bench' | 'variant' | 'metric'>) =>
  `${f.bench}\u0000${f.variant}\u0000${f.metric}`;

/**
 * The figures of several rounds of one bench on one runtime as one figure per (variant, metric):
 * the median of the rounds that measured it (a figure missing from a round says so in its note).
 */
export function medianOfRounds(rounds: readonly (readonly Figure[])[]): Figure[] {
  const byKey = new Map<string, { first: Figure; values: number[] }>();
  for (const figures of rounds)
    for (const f of figures) {
      const entry = byKey.get(keyOf(f));
      if (entry) entry.values.push(f.value);
      else byKey.set(keyOf(f), { first: f, values: [f.value] });
    }
  return [...byKey.values()].map(({ first, values }) => ({
    ...first,
    value: median(values),
    ...(values.length < rounds.length
      ? { note: `measured in ${values.length} of ${rounds.length} rounds` }
      : {}),
  }));
}

/** One row of the comparison: a figure's median on each runtime, last over first, and per round. */
export interface RuntimeComparison {
  bench: string;
  variant: string;
  metric: string;
  unit: string;
  /** The median of each runtime, in the order given (NaN: not measured on it). */
  values: number[];
  /** values[last] / values[0]; > 1: the last runtime's figure is higher. */
  ratio: number;
  /** The same ratio within each round where both were measured. */
  roundRatios: number[];
}

/**
 * `runs[i][r]`: the figures of runtime i in round r (unprefixed variants). A row per figure that
 * the first and the last runtime both measured, with a nonzero value on the first.
 */
export function compareRuntimes(runs: readonly (readonly (readonly Figure[])[])[]): RuntimeComparison[] {
  const first = runs[0];
  const last = runs.at(-1);
  if (!first || !last || runs.length < 2) return [];
  const medians = runs.map((rounds) => new Map(medianOfRounds(rounds).map((f) => [keyOf(f), f])));
  const rows: RuntimeComparison[] = [];
  for (const [key, base] of medians[0]!) {
    const after = medians.at(-1)!.get(key);
    if (!after || base.value === 0 || !Number.isFinite(base.value)) continue;
    const roundRatios: number[] = [];
    for (let r = 0; r < Math.min(first.length, last.length); r++) {
      const a = first[r]!.find((f) => keyOf(f) === key);
      const b = last[r]!.find((f) => keyOf(f) === key);
      if (a && b && a.value !== 0) roundRatios.push(b.value / a.value);
    }
    rows.push({
      bench: base.bench,
      variant: base.variant,
      metric: base.metric,
      unit: base.unit,
      values: medians.map((m) => m.get(key)?.value ?? Number.NaN),
      ratio: after.value / base.value,
      roundRatios,
    });
  }
  return rows;
}

const fmtRatio = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : String(x));

/** The comparison as a table: each runtime's median, the ratio, the ratios of the rounds. */
export function formatComparison(rows: readonly RuntimeComparison[], labels: readonly string[]): string {
  const ratioName = `${labels.at(-1)} / ${labels[0]}`;
  const table = formatTable(
    rows.flatMap((row) => [
      ...labels.map((label, i) => ({
        bench: row.bench,
        variant: `${row.variant} · ${label}`,
        metric: row.metric,
        value: row.values[i]!,
        unit: row.unit,
      })),
      {
        bench: row.bench,
        variant: `${row.variant} · ${ratioName}`,
        metric: `${row.metric}${row.roundRatios.length > 1 ? ` (rounds: ${row.roundRatios.map(fmtRatio).join(', ')})` : ''}`,
        value: row.ratio,
        unit: '×',
      },
    ]),
  );
  return table;
}
