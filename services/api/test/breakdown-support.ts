// A generated mail history for the breakdown tests (SPEC §26): every dimension varied, events
// emitted per email and shuffled across batches; and an independent count over those raw events.
import type { DeliveryEvent } from '@tern/contracts';
import { bounceCategory, classifyUserAgent, type DimCounters, zeroDimCounters } from '@tern/domain';
import { type EventInput, eventsOf, prng } from './support.js';

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
