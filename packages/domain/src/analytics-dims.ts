import type { EmailState } from './email-fold.js';
import { domainOfAddress } from './mailbox-provider.js';
import { instant } from './time.js';

/**
 * The sliceable analytics rollup (SPEC §26): one row per email at its dimensions, written as
 * signed deltas exactly like the daily rollup (`analytics.ts`): after's contribution minus
 * before's, so the sum over an email's changes telescopes to its final contribution whatever
 * order events arrive in. Rows are kept per 15-minute UTC bucket of `createdAt` — every IANA
 * offset is a whole number of quarter hours, so days and hours of any time zone are sums of them.
 */

export const DIM_COUNTER_NAMES = [
  'total',
  'sent',
  'delivered',
  'opened',
  'clicked',
  'bounced',
  'complained',
  'failed',
  'delayed',
] as const;
export type DimCounters = Record<(typeof DIM_COUNTER_NAMES)[number], number>;

export type DimKey = {
  /** Start of the 15-minute UTC bucket of createdAt, `YYYY-MM-DD HH:MM:SS` (ClickHouse DateTime, UTC). */
  bucket: string;
  templateId: string;
  projectId: string;
  campaignId: string;
  sendingDomain: string;
  mailboxProvider: string;
  tags: string[];
  clientFamily: string;
  deviceType: string;
  bounceCategory: string;
  /** Seconds from sent to delivered of a delivered email, else 0. */
  deliverySeconds: number;
};

export type DimDelta = DimKey & { tenantId: string; counters: DimCounters };

const QUARTER_MS = 15 * 60_000;

export function quarterBucket(iso: string): string {
  const ms = Math.floor(instant(iso) / QUARTER_MS) * QUARTER_MS;
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/** Every counter of a dimension row at 0 (a fresh object each call). */
export const zeroDimCounters = (): DimCounters =>
  Object.fromEntries(DIM_COUNTER_NAMES.map((n) => [n, 0])) as DimCounters;

function deliverySeconds(state: EmailState): number {
  if (state.status !== 'DELIVERED' || state.sentAt === null || state.statusAt === null) return 0;
  return Math.max(0, Math.round((instant(state.statusAt) - instant(state.sentAt)) / 1000));
}

/** The email's row in the sliceable rollup, or null while it is not queued. */
export function dimContribution(state: EmailState): (DimKey & { counters: DimCounters }) | null {
  const { queued, status, dims } = state;
  if (queued === null) return null;
  const b = (x: boolean | undefined) => (x ? 1 : 0);
  return {
    bucket: quarterBucket(queued.createdAt),
    templateId: queued.templateId ?? '',
    projectId: queued.projectId ?? '',
    campaignId: queued.campaignId ?? '',
    sendingDomain: domainOfAddress(queued.from) ?? '',
    mailboxProvider: dims?.mailbox ?? 'other',
    tags: [...queued.tags].sort(),
    clientFamily: dims?.client ?? '',
    deviceType: dims?.device ?? '',
    bounceCategory: status === 'BOUNCED' ? (dims?.bounce ?? 'other') : '',
    deliverySeconds: deliverySeconds(state),
    counters: {
      total: 1,
      sent: b(status === 'SENT' || status === 'DELIVERED'),
      delivered: b(status === 'DELIVERED'),
      opened: b(state.openCount > 0),
      clicked: b(state.clickCount > 0),
      bounced: b(status === 'BOUNCED'),
      complained: b(state.complaintCount > 0),
      failed: b(status === 'FAILED'),
      delayed: b(dims?.delayed),
    },
  };
}

const keyOf = (tenantId: string, k: DimKey) =>
  JSON.stringify([
    tenantId,
    k.bucket,
    k.templateId,
    k.projectId,
    k.campaignId,
    k.sendingDomain,
    k.mailboxProvider,
    k.tags,
    k.clientFamily,
    k.deviceType,
    k.bounceCategory,
    k.deliverySeconds,
  ]);

const isZero = (c: DimCounters) => DIM_COUNTER_NAMES.every((n) => c[n] === 0);

/** The rollup change of one email going from `before` to `after` (0, 1 or 2 rows). */
export function diffDimContributions(before: EmailState | null, after: EmailState): DimDelta[] {
  const { tenantId } = after;
  const old = before === null ? null : dimContribution(before);
  const now = dimContribution(after);
  const rows: DimDelta[] = [];
  if (old !== null) {
    const counters = zeroDimCounters();
    for (const n of DIM_COUNTER_NAMES) counters[n] = -old.counters[n];
    rows.push({ ...old, tenantId, counters });
  }
  if (now !== null) rows.push({ ...now, tenantId });
  return aggregateDimDeltas(rows);
}

/** Sums deltas per (tenant, key), dropping rows that cancel out. Order: first appearance. */
export function aggregateDimDeltas(rows: readonly DimDelta[]): DimDelta[] {
  const byKey = new Map<string, DimDelta>();
  for (const row of rows) {
    const key = keyOf(row.tenantId, row);
    const seen = byKey.get(key);
    if (seen === undefined) byKey.set(key, { ...row, counters: { ...row.counters } });
    else for (const n of DIM_COUNTER_NAMES) seen.counters[n] += row.counters[n];
  }
  return [...byKey.values()].filter((r) => !isZero(r.counters));
}
