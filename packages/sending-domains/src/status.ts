import {
  type DomainEventType,
  type DomainRecord,
  type DomainStatus,
  REQUIRED_RECORD_PURPOSES,
} from '@tern/contracts';
import type { RecordCheck } from './dns-check.js';

/** When a domain is looked at again (SPEC §20); tests shorten nothing here, they move the clock. */
export interface CheckSchedule {
  /** A pending domain turns `failed` when it is still not verified this long after it started. Default 72 h. */
  pendingWindowMs: number;
  /** A verified domain is checked again after this long. Default 24 h. */
  verifiedIntervalMs: number;
  /** Backoff of pending checks: a quarter of the time spent pending, between these two. Default 1 min, 1 h. */
  minPendingDelayMs: number;
  maxPendingDelayMs: number;
  /** When the resolver did not answer: look again after this long. Default 5 min. */
  dnsRetryMs: number;
}

export const DEFAULT_CHECK_SCHEDULE: CheckSchedule = {
  pendingWindowMs: 72 * 3_600_000,
  verifiedIntervalMs: 24 * 3_600_000,
  minPendingDelayMs: 60_000,
  maxPendingDelayMs: 3_600_000,
  dnsRetryMs: 5 * 60_000,
};

/** What a check needs to know of the domain as it stands. */
export interface CheckedDomain {
  status: DomainStatus;
  records: readonly DomainRecord[];
  /** Start of the current pending window (creation, or the verify-now that reopened a failed domain). */
  pendingSince: Date;
  verifiedAt: Date | null;
}

/** The domain after a check: its new row fields and the event the change emits, if any. */
export interface CheckOutcome {
  status: DomainStatus;
  records: DomainRecord[];
  reason: string | null;
  pendingSince: Date;
  verifiedAt: Date | null;
  /** Null: not polled any more (failed; `POST /domains/:id/verify` starts again). */
  nextCheckAt: Date | null;
  /** `domain.verified` when it became verified, `domain.failed` when it became failed; else null. */
  event: DomainEventType | null;
}

/** "not found: a (TXT); another value: b (MX)" — names every required record that does not match. */
export function describeMismatch(
  records: readonly DomainRecord[],
  checks?: readonly RecordCheck[],
): string | null {
  const missing: string[] = [];
  const different: string[] = [];
  const unknown: string[] = [];
  records.forEach((r, i) => {
    if (!REQUIRED_RECORD_PURPOSES.includes(r.purpose)) return;
    const label = `${r.name} (${r.type})`;
    if (checks?.[i]?.status === 'unknown') unknown.push(label);
    else if (r.status === 'pending') missing.push(label);
    else if (r.status === 'failed') different.push(label);
  });
  const parts = [
    ...(different.length > 0 ? [`another value: ${different.join(', ')}`] : []),
    ...(missing.length > 0 ? [`not found: ${missing.join(', ')}`] : []),
    ...(unknown.length > 0 ? [`DNS did not answer for: ${unknown.join(', ')}`] : []),
  ];
  return parts.length > 0 ? parts.join('; ') : null;
}

/**
 * The pure rule of SPEC §20. Verified when every required record (DKIM, return-path MX and SPF)
 * matches; a verified domain that stops matching → failed; a pending one stays pending (checked
 * again with backoff) until its window ends → failed. `manual` (verify now) reopens a failed
 * domain that does not match yet: a new pending window, so the owner who just published the
 * records is not answered "failed" while the DNS propagates.
 *
 * A record the resolver did not answer for keeps its previous status, and a domain with such a
 * record changes neither way: a resolver outage never fails a domain.
 */
export function applyCheck(
  domain: CheckedDomain,
  checks: readonly RecordCheck[],
  now: Date,
  opts: { manual: boolean; schedule?: CheckSchedule },
): CheckOutcome {
  const schedule = opts.schedule ?? DEFAULT_CHECK_SCHEDULE;
  const records: DomainRecord[] = domain.records.map((r, i) => {
    const c = checks[i];
    return c === undefined || c.status === 'unknown' ? { ...r } : { ...r, status: c.status };
  });
  const required = records.filter((r) => REQUIRED_RECORD_PURPOSES.includes(r.purpose));
  const undecided = records.some(
    (r, i) => REQUIRED_RECORD_PURPOSES.includes(r.purpose) && checks[i]?.status === 'unknown',
  );
  const matches = !undecided && required.every((r) => r.status === 'verified');
  const reason = describeMismatch(records, checks);
  const at = (ms: number) => new Date(now.getTime() + ms);

  if (matches) {
    return {
      status: 'verified',
      records,
      reason: null,
      pendingSince: domain.pendingSince,
      verifiedAt: domain.status === 'verified' && domain.verifiedAt ? domain.verifiedAt : now,
      nextCheckAt: at(schedule.verifiedIntervalMs),
      event: domain.status === 'verified' ? null : 'domain.verified',
    };
  }
  if (undecided) {
    // Nothing learnt about the records that decide: keep the status, ask again soon.
    return {
      status: domain.status === 'failed' && opts.manual ? 'pending' : domain.status,
      records,
      reason,
      pendingSince: domain.status === 'failed' && opts.manual ? now : domain.pendingSince,
      verifiedAt: domain.verifiedAt,
      nextCheckAt: domain.status === 'failed' && !opts.manual ? null : at(schedule.dnsRetryMs),
      event: null,
    };
  }
  if (domain.status === 'verified') {
    // A record gone or changed: its mail is no longer signed.
    return {
      status: 'failed',
      records,
      reason,
      pendingSince: domain.pendingSince,
      verifiedAt: domain.verifiedAt,
      nextCheckAt: null,
      event: 'domain.failed',
    };
  }
  const pendingSince =
    domain.status === 'failed' ? (opts.manual ? now : domain.pendingSince) : domain.pendingSince;
  if (domain.status === 'failed' && !opts.manual) {
    return {
      status: 'failed',
      records,
      reason,
      pendingSince,
      verifiedAt: domain.verifiedAt,
      nextCheckAt: null,
      event: null,
    };
  }
  const windowEnd = pendingSince.getTime() + schedule.pendingWindowMs;
  if (now.getTime() >= windowEnd) {
    return {
      status: 'failed',
      records,
      reason: `not verified within ${Math.round(schedule.pendingWindowMs / 3_600_000)} h — ${reason}`,
      pendingSince,
      verifiedAt: domain.verifiedAt,
      nextCheckAt: null,
      event: 'domain.failed',
    };
  }
  const elapsed = now.getTime() - pendingSince.getTime();
  const delay = Math.min(Math.max(elapsed / 4, schedule.minPendingDelayMs), schedule.maxPendingDelayMs);
  return {
    status: 'pending',
    records,
    reason,
    pendingSince,
    verifiedAt: domain.verifiedAt,
    // The last check falls exactly at the window's end.
    nextCheckAt: new Date(Math.min(now.getTime() + delay, windowEnd)),
    event: null,
  };
}
