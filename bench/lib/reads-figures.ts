/** The figures of `benches/reads.ts`: medians per case and server, ratios to the bare route. */
import type { Figure } from './report.js';
import { round } from './stats.js';

export type Runs = Partial<Record<'bare route' | 'api' | 'before', { reqPerSec: number[]; cpuUs: number[] }>>;

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export function readsFigures(
  measured: Record<string, Runs>,
  oneConn: Partial<Record<'api' | 'before', { p50: number[]; p99: number[] }>>,
  writers: { eventsPerSec: number; projected: number }[],
): Figure[] {
  const figures: Figure[] = [];
  const fig = (variant: string, metric: string, value: number, unit: string, target?: Figure['target']) =>
    figures.push({ bench: 'reads', variant, metric, value, unit, ...(target ? { target } : {}) });
  // --- Figures: medians per case and server --------------------------------------------------
  for (const [name, runs] of Object.entries(measured)) {
    const bare = runs['bare route']!;
    const bareRate = median(bare.reqPerSec);
    const bareCpu = median(bare.cpuUs);
    const parts = [`bare route ${Math.round(bareRate)} req/s, ${Math.round(bareCpu)} µs CPU`];
    fig(`${name} [bare route]`, 'req/s at 32 connections', bareRate, 'req/s');
    fig(`${name} [bare route]`, 'main-thread CPU per request', bareCpu, 'µs');
    for (const who of ['before', 'api'] as const) {
      const m = runs[who];
      if (!m) continue;
      const variant = who === 'api' ? name : `${name} [before]`;
      const rate = median(m.reqPerSec);
      const cpu = median(m.cpuUs);
      // While writing, against the idle ceiling (what the bare route serves here), as the issue does.
      const ceilingRate = name.endsWith('while writing')
        ? median(measured[name.replace(', while writing', '')]!['bare route']!.reqPerSec)
        : bareRate;
      const targeted =
        who === 'api' && !name.includes(',') ? true : who === 'api' && name.endsWith('while writing');
      fig(variant, 'req/s at 32 connections', rate, 'req/s');
      fig(
        variant,
        'ratio to the bare route (same bytes, own process), 32 connections',
        (rate / ceilingRate) * 100,
        '%',
        targeted ? { op: '>=', value: 40 } : undefined,
      );
      if (name.endsWith('while writing'))
        fig(variant, 'ratio to the bare route measured while writing', (rate / bareRate) * 100, '%');
      fig(variant, 'main-thread CPU per request', cpu, 'µs');
      fig(variant, 'CPU ratio: bare route / api per request', (bareCpu / cpu) * 100, '%');
      parts.push(
        `${who} ${Math.round(rate)} req/s (${m.reqPerSec.map(Math.round).join(', ')}) = ${round((rate / ceilingRate) * 100, 1)} %, ${Math.round(cpu)} µs CPU`,
      );
    }
    console.error(`[reads] ${name}: ${parts.join('; ')}`);
  }
  for (const [who, m] of Object.entries(oneConn)) {
    const variant = who === 'api' ? 'logs page 1, while writing' : 'logs page 1, while writing [before]';
    fig(variant, 'p50 at 1 connection', median(m.p50), 'ms');
    fig(
      variant,
      'p99 at 1 connection',
      median(m.p99),
      'ms',
      who === 'api' ? { op: '<=', value: 10 } : undefined,
    );
    console.error(
      `[reads] ${who}: page 1 at one connection while writing p50 ${round(median(m.p50), 2)} ms, p99 ${round(median(m.p99), 2)} ms`,
    );
  }
  if (writers.length > 0) {
    fig('writer', 'events accepted per second', median(writers.map((w) => w.eventsPerSec)), 'events/s');
    fig('writer', 'new entries projected per second', median(writers.map((w) => w.projected)), 'entries/s');
  }
  return figures;
}
