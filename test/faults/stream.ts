import type { ClickHouseClient } from '@clickhouse/client';
import type pg from 'pg';
import { mulberry32 } from '../support/random.js';

/**
 * The fault suite's event stream and its independent oracle. The oracle does not use the domain
 * fold: every email follows one known lifecycle, in order, so its final status and its analytics
 * contribution are written down by the generator itself.
 */

export type Outcome = 'DELIVERED' | 'BOUNCED' | 'FAILED' | 'SENT';
const OUTCOMES: Outcome[] = ['DELIVERED', 'DELIVERED', 'DELIVERED', 'BOUNCED', 'FAILED', 'SENT'];
const COUNTERS = ['total', 'sent', 'opened', 'clicked', 'bounced', 'complained', 'failed'] as const;
type Counters = Record<(typeof COUNTERS)[number], number>;

export interface RawEvent {
  id: string;
  type: string;
  tenantId: string;
  emailId: string;
  occurredAt: string;
  data?: Record<string, unknown>;
}

export interface Stream {
  events: RawEvent[];
  /** Per tenant: visible rows by status. */
  statuses: Map<string, Record<string, number>>;
  /** Per `tenant|day|template`: summed counters. */
  figures: Map<string, Counters>;
  tenants: string[];
}

/** Deterministic PRNG: the same seed gives the same stream. */
export { mulberry32 as rng };

const DAY0 = Date.UTC(2026, 9, 1);

/** At least `minEvents` events over `tenants` tenants, with the expected projections. */
export function generateStream(opts: {
  minEvents: number;
  tenants: number;
  seed: number;
  prefix: string;
}): Stream {
  const random = mulberry32(opts.seed);
  const tenants = Array.from({ length: opts.tenants }, (_, i) => `${opts.prefix}-t${i}`);
  const events: RawEvent[] = [];
  const statuses = new Map<string, Record<string, number>>();
  const figures = new Map<string, Counters>();
  for (let i = 0; events.length < opts.minEvents; i++) {
    const tenantId = tenants[i % tenants.length]!;
    const emailId = `m${i}`;
    const day = Math.floor(random() * 20);
    const template = ['welcome', 'reset', ''][Math.floor(random() * 3)]!;
    const outcome = OUTCOMES[Math.floor(random() * OUTCOMES.length)]!;
    const t0 = DAY0 + day * 86_400_000 + Math.floor(random() * 80_000_000);
    let n = 0;
    const at = (k: number) => new Date(t0 + k * 1000).toISOString();
    const push = (type: string, data?: Record<string, unknown>) => {
      events.push({
        id: `${emailId}-${n}`,
        type,
        tenantId,
        emailId,
        occurredAt: at(n),
        ...(data ? { data } : {}),
      });
      n++;
    };
    push('email.queued', {
      toEmail: `u${i}@example.com`,
      subject: `Subject ${i}`,
      ...(template ? { templateId: template } : {}),
    });
    let opened = false;
    let clicked = false;
    let complained = false;
    if (outcome === 'FAILED') push('email.failed', { reason: 'provider rejected' });
    else {
      push('email.sent', { provider: 'ses', messageId: `pm-${i}` });
      if (outcome === 'DELIVERED') {
        push('email.delivered');
        if (random() < 0.4) {
          opened = true;
          push('email.opened');
          if (random() < 0.3) push('email.opened');
          if (random() < 0.4) {
            clicked = true;
            push('email.clicked', { url: 'https://example.com/x' });
          }
        }
        if (random() < 0.05) {
          complained = true;
          push('email.complained');
        }
      } else if (outcome === 'BOUNCED') push('email.bounced', { bounceType: 'hard' });
    }
    const byStatus = statuses.get(tenantId) ?? {};
    byStatus[outcome] = (byStatus[outcome] ?? 0) + 1;
    statuses.set(tenantId, byStatus);
    const key = `${tenantId}|${new Date(DAY0 + day * 86_400_000).toISOString().slice(0, 10)}|${template}`;
    const c = figures.get(key) ?? (Object.fromEntries(COUNTERS.map((k) => [k, 0])) as Counters);
    c.total++;
    if (outcome === 'SENT' || outcome === 'DELIVERED') c.sent++;
    if (opened) c.opened++;
    if (clicked) c.clicked++;
    if (outcome === 'BOUNCED') c.bounced++;
    if (complained) c.complained++;
    if (outcome === 'FAILED') c.failed++;
    figures.set(key, c);
  }
  return { events, statuses, figures, tenants };
}

/** Some events of the stream again (duplicates must change nothing). */
export function duplicatesOf(stream: Stream, share: number, seed: number): RawEvent[] {
  const random = mulberry32(seed);
  return stream.events.filter(() => random() < share);
}

export interface Comparison {
  /** Emails (Postgres rows) or counter units (ClickHouse) the stores miss. */
  lost: number;
  /** Emails or counter units the stores hold twice or that the oracle never produced. */
  double: number;
  diffs: string[];
}

/** Postgres visible rows by status and ClickHouse sums, compared exactly with the oracle. */
export async function compareWithOracle(
  stream: Stream,
  pool: pg.Pool,
  ch: ClickHouseClient,
): Promise<Comparison> {
  const result: Comparison = { lost: 0, double: 0, diffs: [] };
  const note = (what: string, expected: number, actual: number) => {
    if (expected === actual) return;
    if (actual < expected) result.lost += expected - actual;
    else result.double += actual - expected;
    if (result.diffs.length < 20) result.diffs.push(`${what}: expected ${expected}, got ${actual}`);
  };
  const { rows } = await pool.query<{ tenant_id: string; status: string; n: number }>(
    `SELECT tenant_id, status, count(*)::int AS n FROM email_logs
      WHERE tenant_id = ANY($1) AND created_at IS NOT NULL GROUP BY 1, 2`,
    [stream.tenants],
  );
  const actualStatuses = new Map(rows.map((r) => [`${r.tenant_id}|${r.status}`, r.n]));
  const expectedStatuses = new Map<string, number>();
  for (const [tenant, byStatus] of stream.statuses)
    for (const [status, n] of Object.entries(byStatus)) expectedStatuses.set(`${tenant}|${status}`, n);
  for (const key of new Set([...actualStatuses.keys(), ...expectedStatuses.keys()]))
    note(`postgres ${key}`, expectedStatuses.get(key) ?? 0, actualStatuses.get(key) ?? 0);

  const answer = await ch.query({
    query: `SELECT tenant_id, toString(day) AS day, template_id,
                   ${COUNTERS.map((c) => `sum(${c}) AS ${c}`).join(', ')}
              FROM email_daily_v2 WHERE has({tenants:Array(String)}, tenant_id)
             GROUP BY tenant_id, day, template_id`,
    query_params: { tenants: stream.tenants },
    format: 'JSONEachRow',
  });
  const actualFigures = new Map<string, Record<string, number>>();
  for (const r of (await answer.json()) as Record<string, string | number>[]) {
    actualFigures.set(
      `${r.tenant_id}|${r.day}|${r.template_id}`,
      Object.fromEntries(COUNTERS.map((c) => [c, Number(r[c])])),
    );
  }
  for (const key of new Set([...actualFigures.keys(), ...stream.figures.keys()])) {
    for (const c of COUNTERS)
      note(`clickhouse ${key} ${c}`, stream.figures.get(key)?.[c] ?? 0, actualFigures.get(key)?.[c] ?? 0);
  }
  return result;
}

/** One line per fault, for the report (docs/reliability.md). */
export function report(fault: string, events: number, c: Comparison, extra = ''): void {
  console.log(
    `[faults] ${fault}: events=${events} lost=${c.lost} double=${c.double}${extra ? ` ${extra}` : ''}`,
  );
}
