import type { ClickHouseClient } from '@clickhouse/client';
import pg from 'pg';

/**
 * Timing spans for finding where a bench's time goes without touching the code under test:
 * every SQL statement sent through a pool built with `timedPgClient`, and every ClickHouse call
 * made through `timedClickHouse`, is timed and summed per statement kind.
 */
export interface SpanTotals {
  count: number;
  totalMs: number;
}

export class Spans {
  readonly totals = new Map<string, SpanTotals>();

  add(label: string, ms: number): void {
    const t = this.totals.get(label) ?? { count: 0, totalMs: 0 };
    t.count++;
    t.totalMs += ms;
    this.totals.set(label, t);
  }

  reset(): void {
    this.totals.clear();
  }

  /** Rows sorted by total time, with the share of `wallMs`. */
  report(
    wallMs: number,
  ): { span: string; count: number; totalMs: number; meanMs: number; pctOfWall: number }[] {
    return [...this.totals]
      .sort((a, b) => b[1].totalMs - a[1].totalMs)
      .map(([span, t]) => ({
        span,
        count: t.count,
        totalMs: Math.round(t.totalMs),
        meanMs: Math.round((t.totalMs / t.count) * 10) / 10,
        pctOfWall: Math.round((t.totalMs / wallMs) * 1000) / 10,
      }));
  }
}

/** A short name for a statement: its first words, with table names, without the values. */
export function statementLabel(sql: string): string {
  const flat = sql.replace(/\s+/g, ' ').trim();
  const head = /^(BEGIN|COMMIT|ROLLBACK)\b/i.exec(flat);
  if (head) return head[1]!.toUpperCase();
  const lock = /FOR UPDATE/i.test(flat) ? ' … FOR UPDATE' : '';
  const table = /\b(?:INTO|UPDATE|FROM)\s+([a-z_][a-z0-9_]*)/i.exec(flat)?.[1] ?? '';
  const verb = flat.split(' ')[0]!.toUpperCase();
  return `${verb} ${table}${lock}`.trim();
}

type QueryArgs = [unknown, ...unknown[]];

/** A `pg.Client` subclass to pass as the pool's `Client`: times every query into `spans`. */
export function timedPgClient(spans: Spans): typeof pg.Client {
  class TimedClient extends pg.Client {
    // pg's overloads cannot be re-declared generically; the call is forwarded unchanged.
    override query(...args: QueryArgs): never {
      const first = args[0];
      const text = typeof first === 'string' ? first : ((first as { text?: string })?.text ?? '?');
      const label = `pg ${statementLabel(text)}`;
      const started = performance.now();
      const callback = args.at(-1);
      if (typeof callback === 'function') {
        args[args.length - 1] = (...cbArgs: unknown[]) => {
          spans.add(label, performance.now() - started);
          return (callback as (...a: unknown[]) => unknown)(...cbArgs);
        };
        return (super.query as (...a: unknown[]) => never)(...args);
      }
      const result = (super.query as (...a: unknown[]) => unknown)(...args);
      if (result && typeof (result as Promise<unknown>).then === 'function') {
        return (result as Promise<unknown>).finally(() =>
          spans.add(label, performance.now() - started),
        ) as never;
      }
      return result as never;
    }
  }
  return TimedClient as unknown as typeof pg.Client;
}

/** The same client, with `insert`, `query` and `command` timed into `spans`. */
export function timedClickHouse(ch: ClickHouseClient, spans: Spans): ClickHouseClient {
  return new Proxy(ch, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || !['insert', 'query', 'command', 'exec'].includes(String(prop))) {
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return async (...args: unknown[]) => {
        const started = performance.now();
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          const params = args[0] as { table?: string; query?: string } | undefined;
          const what = params?.table ?? statementLabel(params?.query ?? '?');
          spans.add(`ch ${String(prop)} ${what}`, performance.now() - started);
        }
      };
    },
  });
}
