import type { DeliveryEvent } from '@tern/contracts';
import { type EventLog, type EventStream, encodeRecords } from '@tern/event-log';
import { idTime } from '@tern/kernel';
import { mulberry32 } from '../../test/support/random.js';

const DAY_MS = 86_400_000;

export interface TrafficOptions {
  /** Stop once this many events were produced (the last email may be cut short). */
  events: number;
  /** Prefix of every tenant, email and event id: makes a run's ids unique. */
  tag: string;
  tenants?: number;
  templatesPerTenant?: number;
  /** Emails are spread over this many days ending at `endMs`. */
  days?: number;
  endMs: number;
  /** Events of about this many consecutive emails are interleaved (arrival order ≠ email order). */
  window?: number;
  seed?: number;
}

/**
 * Delivery traffic as a sending pipeline would report it, per email: queued (80 % with a
 * template), then 2 % failed, else sent, then 4 % bounced or delivered (1 % delayed first), 40 %
 * of delivered opened 1–3 times, a quarter of those clicked, 0.5 % complained. ≈ 3.9 events per
 * email. Emails are spread over tenants and days; the events of neighbouring emails are shuffled
 * together, so the events of one email arrive in any order and mixed with others.
 */
export function generateTraffic(opts: TrafficOptions): DeliveryEvent[] {
  const rnd = mulberry32(opts.seed ?? 42);
  const tenants = opts.tenants ?? 8;
  const templates = opts.templatesPerTenant ?? 20;
  const days = opts.days ?? 30;
  const window = opts.window ?? 2000;
  const startMs = opts.endMs - days * DAY_MS;
  const pick = (n: number) => Math.floor(rnd() * n);
  const iso = (ms: number) => new Date(ms).toISOString();

  const keyed: { at: number; event: DeliveryEvent }[] = [];
  let emailCount = 0;
  // Emails are numbered in time order; the expected count is only used to spread them evenly.
  const expectedEmails = Math.ceil(opts.events / 3.9);
  while (keyed.length < opts.events) {
    const n = emailCount++;
    const tenantId = `${opts.tag}_t${n % tenants}`;
    const queuedMs = startMs + Math.floor((Math.min(n, expectedEmails - 1) / expectedEmails) * days * DAY_MS);
    // As Tern makes them (`em_<time><rest>`): an email's row lands in its day of the log (days.ts).
    const emailId = `em_${idTime(queuedMs)}${opts.tag}_${n}`;
    const events: DeliveryEvent[] = [];
    const base = { tenantId, emailId };
    const hasTemplate = rnd() < 0.8;
    events.push({
      ...base,
      id: `${emailId}.q`,
      type: 'email.queued',
      occurredAt: iso(queuedMs),
      data: {
        toEmail: `user${n}@example.com`,
        subject: `Your order #${n} has shipped`,
        ...(hasTemplate ? { templateId: `tpl_${pick(templates)}` } : {}),
        tags: ['transactional'],
      },
    });
    const r = rnd();
    if (r < 0.02) {
      events.push({
        ...base,
        id: `${emailId}.f`,
        type: 'email.failed',
        occurredAt: iso(queuedMs + 1_000),
        data: { reason: 'invalid recipient domain' },
      });
    } else {
      events.push({
        ...base,
        id: `${emailId}.s`,
        type: 'email.sent',
        occurredAt: iso(queuedMs + 1_000),
        data: { provider: 'ses', messageId: `0100018f-${n.toString(16)}-msg` },
      });
      if (r < 0.06) {
        events.push({
          ...base,
          id: `${emailId}.b`,
          type: 'email.bounced',
          occurredAt: iso(queuedMs + 4_000),
          data: { bounceType: rnd() < 0.7 ? 'hard' : 'soft', reason: 'mailbox unavailable' },
        });
      } else {
        if (rnd() < 0.01) {
          events.push({
            ...base,
            id: `${emailId}.dl`,
            type: 'email.delayed',
            occurredAt: iso(queuedMs + 3_000),
            data: { reason: 'greylisted' },
          });
        }
        events.push({
          ...base,
          id: `${emailId}.d`,
          type: 'email.delivered',
          occurredAt: iso(queuedMs + 5_000),
          data: {},
        });
        if (rnd() < 0.4) {
          const opens = 1 + pick(3);
          for (let i = 0; i < opens; i++) {
            events.push({
              ...base,
              id: `${emailId}.o${i}`,
              type: 'email.opened',
              occurredAt: iso(queuedMs + 60_000 * (i + 1) + pick(3_600_000)),
              data: { userAgent: 'Mozilla/5.0' },
            });
          }
          if (rnd() < 0.25) {
            events.push({
              ...base,
              id: `${emailId}.c0`,
              type: 'email.clicked',
              occurredAt: iso(queuedMs + 7_200_000),
              data: { url: 'https://example.com/orders' },
            });
          }
          if (rnd() < 0.005) {
            events.push({
              ...base,
              id: `${emailId}.x`,
              type: 'email.complained',
              occurredAt: iso(queuedMs + 9_000_000),
              data: { feedbackType: 'abuse' },
            });
          }
        }
      }
    }
    for (const event of events) keyed.push({ at: n + rnd() * window, event });
  }
  keyed.length = opts.events;
  keyed.sort((a, b) => a.at - b.at);
  return keyed.map((k) => k.event);
}

/** How many distinct emails (queued ones) a list of events holds, per tenant and in all. */
export function countQueued(events: readonly DeliveryEvent[]): number {
  let n = 0;
  for (const e of events) if (e.type === 'email.queued') n++;
  return n;
}

/** Splits into chunks of `size` (the last may be shorter). */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** 4 appenders taking batches in turn until none is left; returns events/s over `count` events. */
async function appendAll<T>(
  batches: T[],
  count: number,
  append: (batch: T) => Promise<void>,
): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < batches.length) await append(batches[next++]!);
    }),
  );
  return Math.round((count / (performance.now() - started)) * 1000);
}

/** Appends events to a log in batches of 1000 from 4 concurrent appenders, encoded before the clock starts (the log's own ceiling); returns events/s. */
export const fillLog = (log: EventLog, events: readonly DeliveryEvent[]): Promise<number> =>
  appendAll(chunks(encodeRecords(events), 1000), events.length, (batch) => log.append(batch));

/** The same through a stream: each batch encoded (and sealed) as a service appends it. */
export const fillStream = (stream: EventStream, events: readonly DeliveryEvent[]): Promise<number> =>
  appendAll(chunks(events, 1000), events.length, (batch) => stream.append(batch));
