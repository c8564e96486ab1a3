import type { DeliveryEvent, EmailStatus } from '@tern/contracts';
import { bounceCategory, classifyUserAgent, type DimCounters, zeroDimCounters } from '@tern/domain';
import { DAY_MS, dayStart, type EventInput, eventsOf, isoDay, prng } from './support.js';

// A generated delivery dataset and the figures it must produce, computed straight from the
// generated emails (never from the projection or the domain's analytics code), so the API is
// checked against an independent computation.
export interface GeneratedEmail {
  tenantId: string;
  id: string;
  createdAt: Date;
  toEmail: string;
  subject: string;
  templateId: string | null;
  /** SPEC §16; absent = none. */
  projectId?: string | null;
  tags: string[];
  status: EmailStatus;
  provider: string | null;
  messageId: string | null;
  opens: number;
  clicks: number;
  complaints: number;
}

const STATUSES: EmailStatus[] = [
  'QUEUED',
  'SCHEDULED',
  'SENT',
  'DELAYED',
  'DELIVERED',
  'DELIVERED',
  'DELIVERED',
  'BOUNCED',
  'FAILED',
  'SUPPRESSED',
  'CANCELLED',
];
const SENT_FIRST = new Set<EmailStatus>(['SENT', 'DELAYED', 'DELIVERED', 'BOUNCED']);

export interface DatasetOptions {
  tenantId: string;
  now: string;
  count: number;
  seed: number;
  /** Emails are spread over the days [-spanDays, +1] around today. */
  spanDays: number;
  templates: readonly string[];
}

/** `count` random emails plus hand-placed ones at the edges of periods and retention. */
export function generateEmails(opts: DatasetOptions): GeneratedEmail[] {
  const random = prng(opts.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const emails: GeneratedEmail[] = [];
  const make = (id: string, createdAt: Date, overrides: Partial<GeneratedEmail> = {}): GeneratedEmail => {
    const status = overrides.status ?? pick(STATUSES);
    const sent = SENT_FIRST.has(status);
    const opens = random() < 0.45 ? 1 + Math.floor(random() * 3) : 0;
    return {
      tenantId: opts.tenantId,
      id,
      createdAt,
      toEmail: `${id.toLowerCase().replace(/[^a-z0-9]/g, '')}@example.com`,
      subject: `Subject of ${id}`,
      templateId: random() < 0.8 ? pick(opts.templates) : null,
      tags: random() < 0.5 ? [pick(['welcome', 'receipt', 'digest'])] : [],
      status,
      provider: sent ? pick(['ses', 'postmark']) : null,
      messageId: sent ? `msg-${id}` : null,
      opens,
      clicks: opens > 0 && random() < 0.5 ? 1 + Math.floor(random() * 2) : 0,
      complaints: random() < 0.08 ? 1 : 0,
      ...overrides,
    };
  };

  const today = dayStart(opts.now);
  for (let i = 0; i < opts.count; i++) {
    const dayOffset = -Math.floor(random() * (opts.spanDays + 1));
    // Mixed-case ids: the tie-break on equal createdAt must be byte order ('B' < 'a').
    const id = `${i % 3 === 0 ? 'E' : 'e'}${String(i).padStart(4, '0')}`;
    let at = today.getTime() + dayOffset * DAY_MS + Math.floor(random() * DAY_MS);
    // Today's random emails stay before "now"; a later one is placed on purpose below.
    if (dayOffset === 0)
      at = today.getTime() + Math.floor(random() * (Date.parse(opts.now) - today.getTime()));
    emails.push(make(id, new Date(at)));
  }
  // Equal createdAt: ordered by id desc in byte order.
  const tie = new Date(today.getTime() - 2 * DAY_MS + 3_600_000);
  emails.push(make('Tie-B', tie), make('tie-a', tie), make('tie-C', tie));
  // Later today than "now" (a sender's clock ahead): counted in today's bucket (day-granular).
  emails.push(make('later-today', new Date(today.getTime() + 18 * 3_600_000), { status: 'DELIVERED' }));
  // Tomorrow: outside every period.
  emails.push(make('tomorrow', new Date(today.getTime() + DAY_MS + 60_000), { status: 'DELIVERED' }));
  // Period and retention edges: first instant of a day, and the last instant of the day before.
  for (const offset of [-6, -7, -29, -30, -89, -90, -10, -11]) {
    const start = today.getTime() + offset * DAY_MS;
    emails.push(make(`edge-${-offset}-start`, new Date(start), { status: 'DELIVERED', opens: 1, clicks: 1 }));
    emails.push(
      make(`edge-${-offset}-prev`, new Date(start - 1), { status: 'BOUNCED', opens: 0, clicks: 0 }),
    );
  }
  // Two templates with exactly the same sent counts in the last week: ordered by id asc.
  for (let i = 0; i < 12; i++) {
    const at = new Date(today.getTime() - (i % 5) * DAY_MS + 7_200_000);
    emails.push(make(`tieTpl-z-${i}`, at, { status: 'DELIVERED', templateId: 'tpl-tie-z', complaints: 0 }));
    emails.push(make(`tieTpl-y-${i}`, at, { status: 'SENT', templateId: 'tpl-tie-y', complaints: 0 }));
  }
  return emails;
}

/** The delivery events that produce each email, in an order that is not the natural one. */
export function eventsFor(emails: readonly GeneratedEmail[], seed: number): DeliveryEvent[] {
  const random = prng(seed);
  const all: DeliveryEvent[] = [];
  for (const e of emails) {
    const t = (minutes: number) => new Date(e.createdAt.getTime() + minutes * 60_000).toISOString();
    const inputs: { type: string; occurredAt: string; data?: Record<string, unknown> }[] = [
      {
        type: 'email.queued',
        occurredAt: e.createdAt.toISOString(),
        data: {
          toEmail: e.toEmail,
          subject: e.subject,
          tags: e.tags,
          ...(e.templateId ? { templateId: e.templateId } : {}),
          ...(e.projectId ? { projectId: e.projectId } : {}),
          ...(e.status === 'SCHEDULED' ? { scheduledAt: t(24 * 60) } : {}),
        },
      },
    ];
    if (SENT_FIRST.has(e.status)) {
      inputs.push({
        type: 'email.sent',
        occurredAt: t(1),
        data: { provider: e.provider, messageId: e.messageId },
      });
    }
    switch (e.status) {
      case 'DELAYED':
        inputs.push({ type: 'email.delayed', occurredAt: t(2), data: { reason: 'greylisted' } });
        break;
      case 'DELIVERED':
        inputs.push({ type: 'email.delivered', occurredAt: t(2) });
        break;
      case 'BOUNCED':
        inputs.push({ type: 'email.bounced', occurredAt: t(2), data: { bounceType: 'hard' } });
        break;
      case 'FAILED':
        inputs.push({ type: 'email.failed', occurredAt: t(1), data: { reason: 'rejected' } });
        break;
      case 'SUPPRESSED':
        inputs.push({ type: 'email.suppressed', occurredAt: t(1), data: { reason: 'unsubscribed' } });
        break;
      case 'CANCELLED':
        inputs.push({ type: 'email.cancelled', occurredAt: t(1) });
        break;
      default:
        break;
    }
    for (let i = 0; i < e.opens; i++) inputs.push({ type: 'email.opened', occurredAt: t(10 + i) });
    for (let i = 0; i < e.clicks; i++)
      inputs.push({ type: 'email.clicked', occurredAt: t(20 + i), data: { url: 'https://x.test/' } });
    for (let i = 0; i < e.complaints; i++) inputs.push({ type: 'email.complained', occurredAt: t(30 + i) });
    all.push(...eventsOf(e.tenantId, e.id, inputs));
  }
  // Shuffle (Fisher–Yates): events arrive out of order, the fold must not care.
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all;
}

// --- Expected figures ------------------------------------------------------------------------

export interface Window {
  /** First visible UTC day, inclusive (YYYY-MM-DD). */
  fromDay: string;
  /** Last UTC day, inclusive. */
  toDay: string;
}

/** The cohort window of `days` under `retentionDays`, from first principles. */
export function windowOf(now: string, days: number, retentionDays: number): Window {
  const periodStart = dayStart(now, -(days - 1));
  // Visible iff createdAt ≥ 00:00 of (today − retentionDays).
  const retentionStart = dayStart(now, -retentionDays);
  const from = new Date(Math.max(periodStart.getTime(), retentionStart.getTime()));
  return { fromDay: isoDay(from), toDay: isoDay(dayStart(now)) };
}

export function cohort(emails: readonly GeneratedEmail[], w: Window): GeneratedEmail[] {
  return emails.filter((e) => {
    const day = isoDay(e.createdAt);
    return day >= w.fromDay && day <= w.toDay;
  });
}

const isSent = (e: GeneratedEmail) => e.status === 'SENT' || e.status === 'DELIVERED';

export function expectedTotals(emails: readonly GeneratedEmail[]) {
  return {
    total: emails.length,
    sent: emails.filter(isSent).length,
    opened: emails.filter((e) => e.opens > 0).length,
    clicked: emails.filter((e) => e.clicks > 0).length,
    bounced: emails.filter((e) => e.status === 'BOUNCED').length,
    complained: emails.filter((e) => e.complaints > 0).length,
    failed: emails.filter((e) => e.status === 'FAILED').length,
    // The generated traffic has no machine open (providers.int.test.ts covers them).
    machineOpened: 0,
  };
}

/** Percent, one decimal, half-up (exact halves are exact in binary floating point). */
const pct = (n: number, d: number) => (d === 0 ? 0 : Math.round((n * 1000) / d) / 10);

export function expectedRates(t: ReturnType<typeof expectedTotals>) {
  return {
    openRate: pct(t.opened, t.sent),
    clickRate: pct(t.clicked, t.sent),
    bounceRate: pct(t.bounced, t.total),
    complaintRate: pct(t.complained, t.sent),
  };
}

export function expectedDaily(emails: readonly GeneratedEmail[], now: string, days: number, w: Window) {
  const out = [];
  for (let i = days - 1; i >= 0; i--) {
    const date = isoDay(dayStart(now, -i));
    const those = date >= w.fromDay ? emails.filter((e) => isoDay(e.createdAt) === date) : [];
    out.push({
      date,
      sent: those.filter(isSent).length,
      opened: those.filter((e) => e.opens > 0).length,
      clicked: those.filter((e) => e.clicks > 0).length,
      bounced: those.filter((e) => e.status === 'BOUNCED').length,
    });
  }
  return out;
}

export function expectedTop(
  inCohort: readonly GeneratedEmail[],
  names: ReadonlyMap<string, { name: string; subject: string }>,
) {
  const byTemplate = new Map<string, GeneratedEmail[]>();
  for (const e of inCohort) {
    if (e.templateId === null) continue;
    byTemplate.set(e.templateId, [...(byTemplate.get(e.templateId) ?? []), e]);
  }
  return [...byTemplate.entries()]
    .map(([id, list]) => ({
      id,
      name: names.get(id)?.name ?? id,
      subject: names.get(id)?.subject ?? '',
      sent: list.filter(isSent).length,
      opened: list.filter((e) => e.opens > 0).length,
      clicked: list.filter((e) => e.clicks > 0).length,
    }))
    .sort((a, b) => b.sent - a.sent || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, 10);
}

/** The log as SPEC §7 defines it: visible entries, newest first, id desc (byte order) on ties. */
export function expectedLog(emails: readonly GeneratedEmail[], now: string, retentionDays: number) {
  const cutoff = dayStart(now, -retentionDays).getTime();
  return emails
    .filter((e) => e.createdAt.getTime() >= cutoff)
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .map((e) => ({
      id: e.id,
      toEmail: e.toEmail,
      subject: e.subject,
      status: e.status,
      provider: e.provider,
      messageId: e.messageId,
      createdAt: e.createdAt.toISOString(),
      tags: e.tags,
      opened: e.opens > 0,
      clicked: e.clicks > 0,
      complained: e.complaints > 0,
    }));
}

// A generated mail history for the breakdown tests (SPEC §26): every dimension varied, events
// emitted per email and shuffled across batches; and an independent count over those raw events.
/** Recipient domains, their MX (published in the test DNS server) and the provider they mean. */
export const RECIPIENT_DOMAINS: { domain: string; mx: string | null; provider: string }[] = [
  { domain: 'gmail.com', mx: null, provider: 'gmail' },
  { domain: 'yahoo.com', mx: null, provider: 'yahoo' },
  { domain: 'acme-corp.test', mx: 'aspmx.l.google.com', provider: 'google_workspace' },
  { domain: 'contoso.test', mx: 'contoso-test.mail.protection.outlook.com', provider: 'microsoft_365' },
  { domain: 'tiny.test', mx: 'mx.tiny.test', provider: 'other' },
];
export const UAS = [
  'Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17029; Pro)',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
];
export const DIAGNOSTICS = [
  ['5.1.1', '550 5.1.1 <x@tiny.test>: Recipient address rejected: User unknown'],
  ['5.2.2', '552-5.2.2 The email account that you tried to reach is over quota.'],
  ['5.7.1', '550-5.7.1 Our system has detected that this message is likely unsolicited mail.'],
] as const;
export const TAG_POOL = ['receipt', 'promo', 'welcome'];
export const TEMPLATES = ['tpl-a', 'tpl-b'];
export const PROJECTS = ['prj_one', 'prj_two'];
export const CAMPAIGNS = ['cmp_spring'];
export const SENDING = ['news.a.test', 'mail.b.test'];

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

/** `count` emails of `tenantId` created over the `spanHours` before `now`, with their events. */
export function generateHistory(tenantId: string, now: string, count: number, seed: number): DeliveryEvent[] {
  const r = prng(seed);
  const events: DeliveryEvent[] = [];
  const end = Date.parse(now);
  for (let i = 0; i < count; i++) {
    const created = end - Math.floor(r() * 9 * 86_400_000) - 60_000;
    const at = (s: number) => new Date(created + s * 1000).toISOString();
    const maybe = <T>(xs: readonly T[]) => (r() < 0.25 ? undefined : pick(r, xs));
    const tags = TAG_POOL.filter(() => r() < 0.4);
    const templateId = maybe(TEMPLATES);
    const projectId = maybe(PROJECTS);
    const campaignId = r() < 0.3 ? CAMPAIGNS[0] : undefined;
    const inputs: EventInput[] = [
      {
        type: 'email.queued',
        occurredAt: at(0),
        data: {
          toEmail: `u${i}@${pick(r, RECIPIENT_DOMAINS).domain}`,
          subject: 's',
          from: `Team <hello@${pick(r, SENDING)}>`,
          ...(tags.length ? { tags } : {}),
          ...(templateId ? { templateId } : {}),
          ...(projectId ? { projectId } : {}),
          ...(campaignId ? { campaignId } : {}),
        },
      },
    ];
    const roll = r();
    if (roll < 0.08) inputs.push({ type: 'email.failed', occurredAt: at(1), data: { reason: 'refused' } });
    else if (roll > 0.1) {
      inputs.push({ type: 'email.sent', occurredAt: at(1), data: { provider: 'smtp', messageId: `m${i}` } });
      if (r() < 0.2)
        inputs.push({ type: 'email.delayed', occurredAt: at(2), data: { reason: 'greylisted' } });
      if (r() < 0.15) {
        const [smtpStatus, diagnostic] = pick(r, DIAGNOSTICS);
        inputs.push({
          type: 'email.bounced',
          occurredAt: at(5),
          data: { bounceType: 'hard', smtpStatus, diagnostic },
        });
      } else {
        inputs.push({ type: 'email.delivered', occurredAt: at(1 + Math.floor(r() * 600)) });
        if (r() < 0.5)
          inputs.push({ type: 'email.opened', occurredAt: at(900), data: { userAgent: pick(r, UAS) } });
        if (r() < 0.2) inputs.push({ type: 'email.opened', occurredAt: at(950), data: { machine: true } });
        if (r() < 0.25)
          inputs.push({
            type: 'email.clicked',
            occurredAt: at(1000),
            data: { url: 'https://x.test', userAgent: pick(r, UAS) },
          });
        if (r() < 0.05) inputs.push({ type: 'email.complained', occurredAt: at(2000) });
      }
    }
    events.push(...eventsOf(tenantId, `em_${seed}_${i}`, inputs));
  }
  // Any order: the fold must not care.
  for (let i = events.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [events[i], events[j]] = [events[j]!, events[i]!];
  }
  return events;
}

/** An email's counters, as the rollup keeps them. */
export type Counts = DimCounters;
export type EmailFacts = {
  localDay: string;
  dims: Record<string, string | string[]>;
  counts: Counts;
};

/**
 * The independent count: each email's facts read straight off its raw events (no fold, no
 * rollup): its queued data, which outcome events exist, the first human open/click's user agent,
 * its bounce's diagnostic; the provider from the test's own domain table.
 */
export function factsOf(events: readonly DeliveryEvent[], timeZone: string): EmailFacts[] {
  const byEmail = new Map<string, DeliveryEvent[]>();
  for (const e of events) byEmail.set(e.emailId, [...(byEmail.get(e.emailId) ?? []), e]);
  const dayOf = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  });
  const out: EmailFacts[] = [];
  for (const list of byEmail.values()) {
    const q = list.find((e) => e.type === 'email.queued');
    if (q?.type !== 'email.queued') continue;
    const has = (t: DeliveryEvent['type']) => list.some((e) => e.type === t);
    const human = list
      .filter(
        (e) =>
          (e.type === 'email.opened' || e.type === 'email.clicked') &&
          !(e.data as { machine?: boolean }).machine,
      )
      .sort((a, b) => Date.parse(a.occurredAt) - Date.parse(b.occurredAt))[0];
    const bounce = list.find((e) => e.type === 'email.bounced');
    const client = human ? classifyUserAgent((human.data as { userAgent?: string }).userAgent) : null;
    const domain = q.data.toEmail!.split('@')[1]!;
    const bounced = has('email.bounced');
    const delivered = has('email.delivered') && !bounced;
    out.push({
      localDay: dayOf.format(new Date(q.occurredAt)),
      dims: {
        tag: q.data.tags ?? [],
        template: q.data.templateId ?? '',
        project: q.data.projectId ?? '',
        campaign: q.data.campaignId ?? '',
        domain: q.data.from!.replace(/.*@/, '').replace(/>$/, ''),
        provider: RECIPIENT_DOMAINS.find((d) => d.domain === domain)!.provider,
        client: client?.client ?? '',
        device: client?.device ?? '',
        bounce:
          bounce?.type === 'email.bounced'
            ? bounceCategory(bounce.data.smtpStatus, bounce.data.diagnostic)
            : '',
      },
      counts: {
        total: 1,
        sent: bounced || has('email.failed') ? 0 : has('email.sent') ? 1 : 0,
        delivered: delivered ? 1 : 0,
        opened: list.some((e) => e.type === 'email.opened' && !(e.data as { machine?: boolean }).machine)
          ? 1
          : 0,
        clicked: has('email.clicked') ? 1 : 0,
        bounced: bounced ? 1 : 0,
        complained: has('email.complained') ? 1 : 0,
        failed: has('email.failed') ? 1 : 0,
        delayed: has('email.delayed') ? 1 : 0,
      },
    });
  }
  return out;
}

/** What the breakdown must answer: per key, the sums of the matching emails' counts. */
export function expectedBreakdown(
  facts: readonly EmailFacts[],
  by: string,
  filters: Record<string, string>,
  fromDay: string,
  toDay: string,
): Map<string, Counts> {
  const out = new Map<string, Counts>();
  for (const f of facts) {
    if (f.localDay < fromDay || f.localDay > toDay) continue;
    const ok = Object.entries(filters).every(([d, v]) =>
      d === 'tag' ? (f.dims.tag as string[]).includes(v) : f.dims[d] === v,
    );
    if (!ok) continue;
    const keys =
      by === 'tag'
        ? (f.dims.tag as string[]).length
          ? (f.dims.tag as string[])
          : ['']
        : [f.dims[by] as string];
    for (const k of keys) {
      const c = out.get(k) ?? zeroDimCounters();
      for (const n of Object.keys(c) as (keyof Counts)[]) c[n] += f.counts[n];
      out.set(k, c);
    }
  }
  return out;
}
