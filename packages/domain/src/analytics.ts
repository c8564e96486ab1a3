import type { EmailState } from './email-fold.js';
import { DAY_MS, instant, startOfDayUTC, utcDay } from './time.js';

/** Analytics counters of SPEC §6; in a delta they are signed. */
export type AnalyticsCounters = {
  total: number;
  sent: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
  failed: number;
  /** Emails opened by a machine at least once (SPEC §21): reported apart, never in `opened`. */
  machineOpened: number;
};

export const COUNTER_NAMES = [
  'total',
  'sent',
  'opened',
  'clicked',
  'bounced',
  'complained',
  'failed',
  'machineOpened',
] as const;

export function zeroCounters(): AnalyticsCounters {
  return { total: 0, sent: 0, opened: 0, clicked: 0, bounced: 0, complained: 0, failed: 0, machineOpened: 0 };
}

export function isZeroCounters(c: AnalyticsCounters): boolean {
  return COUNTER_NAMES.every((k) => c[k] === 0);
}

export function addCounters(a: AnalyticsCounters, b: AnalyticsCounters, sign: 1 | -1 = 1): AnalyticsCounters {
  const out = zeroCounters();
  for (const k of COUNTER_NAMES) out[k] = a[k] + sign * b[k];
  return out;
}

/** What one email adds to the rollup: one row at (createdAt UTC day, templateId or '', projectId or ''). */
export type Contribution = {
  day: string;
  templateId: string;
  projectId: string;
  counters: AnalyticsCounters;
};

/**
 * A signed change of the rollups: one `email_daily_v2` row (projectId ignored there), and one
 * `email_project_daily_v1` row when projectId is not ''. Outbox rows written before projects
 * existed lack projectId: read it with `?? ''`.
 */
export type AnalyticsDelta = {
  tenantId: string;
  day: string;
  templateId: string;
  projectId: string;
  counters: AnalyticsCounters;
};

/** Contribution of one email state (docs/architecture.md), or null while it is not queued. */
export function contribution(state: EmailState): Contribution | null {
  const { queued, status } = state;
  if (queued === null) return null;
  const b = (x: boolean) => (x ? 1 : 0);
  return {
    day: utcDay(queued.createdAt),
    templateId: queued.templateId ?? '',
    projectId: queued.projectId ?? '',
    counters: {
      total: 1,
      sent: b(status === 'SENT' || status === 'DELIVERED'),
      opened: b(state.openCount > 0),
      clicked: b(state.clickCount > 0),
      bounced: b(status === 'BOUNCED'),
      complained: b(state.complaintCount > 0),
      failed: b(status === 'FAILED'),
      machineOpened: b((state.machineOpenCount ?? 0) > 0),
    },
  };
}

/**
 * Rollup change when one email goes from `before` to `after`: after's contribution minus
 * before's. Summed over every change of an email it telescopes to its final contribution, which
 * is what keeps the rollup exact while events arrive in any order. 0, 1 or 2 rows (2 when an
 * earlier email.queued moved the email to another day, template or project); all-zero rows are left out.
 */
export function diffContributions(before: EmailState | null, after: EmailState): AnalyticsDelta[] {
  const { tenantId } = after;
  const old = before === null ? null : contribution(before);
  const now = contribution(after);
  const rows: AnalyticsDelta[] = [];
  const push = (c: Contribution, counters: AnalyticsCounters) => {
    if (!isZeroCounters(counters))
      rows.push({ tenantId, day: c.day, templateId: c.templateId, projectId: c.projectId, counters });
  };
  if (
    old !== null &&
    now !== null &&
    old.day === now.day &&
    old.templateId === now.templateId &&
    old.projectId === now.projectId
  ) {
    push(now, addCounters(now.counters, old.counters, -1));
    return rows;
  }
  if (old !== null) push(old, addCounters(zeroCounters(), old.counters, -1));
  if (now !== null) push(now, now.counters);
  return rows;
}

/** Sum deltas per (tenantId, day, templateId, projectId), dropping rows that cancel out. Order: first appearance. */
export function aggregateDeltas(rows: readonly AnalyticsDelta[]): AnalyticsDelta[] {
  const byKey = new Map<string, AnalyticsDelta>();
  for (const row of rows) {
    // JSON of the tuple: unambiguous whatever characters the parts hold.
    const key = JSON.stringify([row.tenantId, row.day, row.templateId, row.projectId ?? '']);
    const seen = byKey.get(key);
    byKey.set(
      key,
      seen === undefined
        ? { ...row, projectId: row.projectId ?? '', counters: { ...row.counters } }
        : { ...seen, counters: addCounters(seen.counters, row.counters) },
    );
  }
  return [...byKey.values()].filter((r) => !isZeroCounters(r.counters));
}

/** Analytics period (SPEC §6): `since` = 00:00:00.000Z of today − days + 1 (UTC), `until` = now. */
export type AnalyticsPeriod = { days: number; since: string; until: string };

export function analyticsPeriod(now: Date, days: number): AnalyticsPeriod {
  const since = new Date(startOfDayUTC(now).getTime() - (days - 1) * DAY_MS);
  return { days, since: since.toISOString(), until: now.toISOString() };
}

/** The `days` UTC dates (`YYYY-MM-DD`) from the day of `since` on, oldest first. */
export function dayRange(since: string | Date, days: number): string[] {
  const start = startOfDayUTC(typeof since === 'string' ? new Date(instant(since)) : since).getTime();
  return Array.from({ length: days }, (_, i) => utcDay(start + i * DAY_MS));
}

/**
 * `n / d` in percent, one decimal, half-up, 0 when `d` is 0. Integer arithmetic, so an exact
 * half (1/16 = 6.25 %) always rounds up instead of depending on how the quotient is stored.
 */
export function rate(n: number, d: number): number {
  if (d === 0) return 0;
  return Math.floor((2000 * n + d) / (2 * d)) / 10;
}

export type Rates = { openRate: number; clickRate: number; bounceRate: number; complaintRate: number };

export function rates(totals: Omit<AnalyticsCounters, 'failed' | 'machineOpened'>): Rates {
  return {
    openRate: rate(totals.opened, totals.sent),
    clickRate: rate(totals.clicked, totals.sent),
    bounceRate: rate(totals.bounced, totals.total),
    complaintRate: rate(totals.complained, totals.sent),
  };
}

/**
 * Oldest visible `createdAt` under a retention of `retentionDays` (docs/architecture.md):
 * day-granular in UTC, so logs and the daily rollup cut at the same instant.
 */
export function retentionCutoff(now: Date, retentionDays: number): Date {
  return new Date(startOfDayUTC(now).getTime() - retentionDays * DAY_MS);
}
