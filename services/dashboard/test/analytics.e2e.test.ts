/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * SPEC §26 in Chromium: the overview's breakdown (dimension, filters, from/to, hour or day lines),
 * the Deliverability page, a domain's DMARC tab, and the Logs page's filters. Every figure checked
 * is counted here from the events this file ingests (an independent model of SPEC §26's counting),
 * never read back from the API: a page that shows another row, another count or another rate fails.
 */
import nodemailer from 'nodemailer';
import { describe, expect, inject, it } from 'vitest';
import { gzip, reportXml } from '../../../packages/inbound/test/dmarc-report.js';
import { waitFor } from '../../../test/support/services.js';
import {
  api,
  apiWrite,
  checkPage,
  dashboardFile,
  emailEvents,
  type Outcomes,
  postEvents,
} from './fixture.js';

const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148';
const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const OUTLOOK = 'Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17029; Pro)';
const THUNDERBIRD = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:115.0) Gecko/20100101 Thunderbird/115.5.0';
const UNKNOWN_USER = [
  '5.1.1',
  '550 5.1.1 <x@example.com>: Recipient address rejected: User unknown',
] as const;
const MAILBOX_FULL = ['5.2.2', 'said: 552 5.2.2 Mailbox full (in reply to RCPT TO command)'] as const;

/** One email of the file and what happens to it. */
interface Spec {
  id: string;
  to: string;
  provider: 'gmail' | 'outlook' | 'yahoo';
  tags: string[];
  outcome: 'delivered' | 'bounced' | 'sent';
  /** Seconds from sent to delivered. */
  deliverS?: number;
  ua?: string;
  client?: string;
  device?: string;
  click?: boolean;
  complain?: boolean;
  delayed?: boolean;
  bounce?: readonly [string, string];
  category?: string;
  /** Rendered from the file's template "Receipt". */
  templated?: boolean;
}

const SPECS: Spec[] = [
  {
    templated: true,
    id: 'g1',
    to: 'g1@gmail.com',
    provider: 'gmail',
    tags: ['receipt'],
    outcome: 'delivered',
    deliverS: 2,
    ua: IPHONE,
    client: 'Apple Mail',
    device: 'mobile',
    click: true,
  },
  {
    templated: true,
    id: 'g2',
    to: 'g2@gmail.com',
    provider: 'gmail',
    tags: ['receipt'],
    outcome: 'delivered',
    deliverS: 6,
    ua: CHROME,
    client: 'Chrome',
    device: 'desktop',
  },
  {
    id: 'g3',
    to: 'g3@gmail.com',
    provider: 'gmail',
    tags: ['receipt'],
    outcome: 'delivered',
    deliverS: 10,
    complain: true,
  },
  {
    id: 'g4',
    to: 'g4@gmail.com',
    provider: 'gmail',
    tags: ['welcome'],
    outcome: 'bounced',
    bounce: UNKNOWN_USER,
    category: 'unknown_user',
  },
  {
    id: 'g5',
    to: 'g5@gmail.com',
    provider: 'gmail',
    tags: ['welcome'],
    outcome: 'delivered',
    deliverS: 6,
    delayed: true,
  },
  {
    templated: true,
    id: 'o1',
    to: 'o1@outlook.com',
    provider: 'outlook',
    tags: ['receipt'],
    outcome: 'delivered',
    deliverS: 20,
    ua: OUTLOOK,
    client: 'Outlook',
    device: 'desktop',
    click: true,
  },
  {
    templated: true,
    id: 'o2',
    to: 'o2@outlook.com',
    provider: 'outlook',
    tags: ['receipt'],
    outcome: 'bounced',
    bounce: MAILBOX_FULL,
    category: 'mailbox_full',
  },
  {
    id: 'o3',
    to: 'o3@outlook.com',
    provider: 'outlook',
    tags: ['welcome'],
    outcome: 'delivered',
    deliverS: 20,
    delayed: true,
  },
  {
    id: 'y1',
    to: 'y1@yahoo.com',
    provider: 'yahoo',
    tags: ['receipt'],
    outcome: 'delivered',
    deliverS: 60,
    ua: THUNDERBIRD,
    client: 'Thunderbird',
    device: 'desktop',
  },
  { id: 'y2', to: 'y2@yahoo.com', provider: 'yahoo', tags: ['receipt'], outcome: 'sent' },
  {
    id: 'y3',
    to: 'y3@yahoo.com',
    provider: 'yahoo',
    tags: [],
    outcome: 'bounced',
    bounce: UNKNOWN_USER,
    category: 'unknown_user',
  },
];

/** When each email was queued: a few minutes ago, a second apart (outcomes follow within a minute). */
const BASE = Date.now() - 5 * 60_000;
const queuedAt = (i: number) => BASE - i * 1000;

function eventsOf(tenantId: string, templateId: string): unknown[] {
  return SPECS.flatMap((s, i) => {
    const emailId = `an-${s.id}`;
    const ev = emailEvents(tenantId, emailId, queuedAt(i));
    const out = [
      ev('email.queued', 0, {
        toEmail: s.to,
        subject: `Message ${s.id}`,
        tags: s.tags,
        ...(s.templated ? { templateId } : {}),
      }),
      ev('email.sent', 1000, { provider: 'ses', messageId: `<${emailId}@tern>` }),
    ];
    if (s.delayed) out.push(ev('email.delayed', 1500, { reason: '451 4.7.1 try again later' }));
    if (s.outcome === 'bounced' && s.bounce)
      out.push(
        ev('email.bounced', 2000, { bounceType: 'hard', smtpStatus: s.bounce[0], diagnostic: s.bounce[1] }),
      );
    if (s.outcome === 'delivered') out.push(ev('email.delivered', 1000 + (s.deliverS ?? 1) * 1000));
    const done = 1000 + (s.deliverS ?? 1) * 1000;
    if (s.ua) out.push(ev('email.opened', done + 1000, { userAgent: s.ua }));
    if (s.click) out.push(ev('email.clicked', done + 2000, { url: 'https://example.com/', userAgent: s.ua }));
    if (s.complain) out.push(ev('email.complained', done + 3000));
    return out;
  });
}

/** SPEC §26's rates, one decimal, half up (`packages/domain` `rate`), as the page prints them. */
const pct = (n: number, d: number) =>
  `${(d === 0 ? 0 : Math.floor((2000 * n + d) / (2 * d)) / 10).toFixed(1)}%`;

interface Counts extends Outcomes {
  total: number;
  delayed: number;
}
function count(specs: Spec[]): Counts {
  const n = (f: (s: Spec) => boolean) => specs.filter(f).length;
  return {
    total: specs.length,
    sent: n((s) => s.outcome !== 'bounced'),
    delivered: n((s) => s.outcome === 'delivered'),
    opened: n((s) => s.ua !== undefined),
    clicked: n((s) => s.click === true),
    bounced: n((s) => s.outcome === 'bounced'),
    complained: n((s) => s.complain === true),
    delayed: n((s) => s.delayed === true),
  };
}

/** The breakdown table's cells of a row as the page shows them, from a group of specs. */
function expectedRow(key: string, specs: Spec[]): string[] {
  const c = count(specs);
  return [
    key,
    ...[c.total, c.sent, c.delivered, c.opened, c.clicked, c.bounced, c.complained].map(String),
    pct(c.delivered, c.sent),
    pct(c.opened, c.sent),
    pct(c.clicked, c.sent),
    pct(c.bounced, c.total),
    pct(c.complained, c.sent),
  ];
}

/** Rows of a breakdown by `keyOf` (one per value; a tag breakdown counts an email once per tag), total desc then key. */
function expectedRows(specs: Spec[], keysOf: (s: Spec) => string[]): string[][] {
  const groups = new Map<string, Spec[]>();
  for (const s of specs) for (const k of keysOf(s)) groups.set(k, [...(groups.get(k) ?? []), s]);
  return [...groups.entries()]
    .sort(([a, x], [b, y]) => y.length - x.length || (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, g]) => expectedRow(k === '' ? '(none)' : k, g));
}

/** Nearest-rank quantile of delivered seconds (no interpolation: a value of the set). */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
}
const seconds = (s: number) => (s < 10 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`);

const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const utcHour = (ms: number) => `${new Date(ms).toISOString().slice(0, 13).replace('T', ' ')}:00`;

describe('analytics you can slice, in Chromium (SPEC §26)', () => {
  let templateId: string;

  const { tern, open } = dashboardFile('analytics', {
    seed: async (tern) => {
      const template = await apiWrite<{ id: string }>(tern, 'POST', '/templates', {
        name: 'Receipt',
        subject: 'Your receipt',
        html: '<p>Thank you.</p>',
      });
      templateId = template.id;
      await postEvents(tern, eventsOf(tern.tenant, templateId));
      // Projected into both read models: the log, and the sliceable rollup with every outcome.
      await waitFor(
        async () => {
          const logs = await api<{ meta: { total: number } }>(tern, '/emails/logs?limit=1');
          const b = await api<{ data: Counts[] }>(tern, '/analytics/breakdown?by=provider&days=7');
          const sum = (k: keyof Counts) => b.data.reduce((n, r) => n + r[k], 0);
          const want = count(SPECS);
          return (
            logs.meta.total === SPECS.length &&
            (Object.keys(want) as (keyof Counts)[]).every((k) => sum(k) === want[k])
          );
        },
        { timeoutMs: 60_000, intervalMs: 250, description: 'the events projected' },
      );
    },
  });

  it('overview breakdown: each dimension, filters combined, from/to and hourly lines show the counts of the events', async () => {
    const w = await open();
    const section = w.page.getByRole('region', { name: 'Breakdown', exact: true });
    const table = section.getByRole('region', { name: /^Breakdown by/ }).locator('table');
    const cells = async () => {
      await section.locator('[aria-busy="false"]').first().waitFor();
      return table
        .locator('tbody tr')
        .evaluateAll((trs) =>
          trs.map((tr) => Array.from(tr.querySelectorAll('th, td')).map((c) => c.textContent?.trim() ?? '')),
        );
    };
    const shows = async (rows: string[][]) => expect.poll(cells, { timeout: 15_000 }).toEqual(rows);

    // By mailbox provider (the default), over the overview's 30 days.
    await shows(expectedRows(SPECS, (s) => [s.provider]));
    const chart = section.getByRole('img', { name: /by mailbox provider/ });
    expect(await chart.getAttribute('aria-label')).toContain('gmail 5, outlook 3, yahoo 3');
    expect(await section.locator('canvas').count()).toBeGreaterThan(0);

    await section.getByLabel('Breakdown by', { exact: true }).selectOption({ label: 'Tag' });
    await shows(expectedRows(SPECS, (s) => (s.tags.length === 0 ? [''] : s.tags)));

    // A filter of another dimension narrows the rows: tags of gmail's emails only.
    await section.getByLabel('Filter by', { exact: true }).selectOption({ label: 'Mailbox provider' });
    await section.getByLabel('Filter value', { exact: true }).fill('gmail');
    await section.getByRole('button', { name: 'Add filter' }).click();
    const gmail = SPECS.filter((s) => s.provider === 'gmail');
    await shows(expectedRows(gmail, (s) => s.tags));

    // Filters combine: gmail AND tag welcome, broken down by bounce category.
    await section.getByLabel('Filter by', { exact: true }).selectOption({ label: 'Tag' });
    await section.getByLabel('Filter value', { exact: true }).fill('welcome');
    await section.getByRole('button', { name: 'Add filter' }).click();
    await section.getByLabel('Breakdown by', { exact: true }).selectOption({ label: 'Bounce category' });
    await shows(
      expectedRows(
        gmail.filter((s) => s.tags.includes('welcome')),
        (s) => [s.category ?? ''],
      ),
    );
    await section.getByRole('button', { name: 'Remove filter Tag = welcome' }).click();
    await section.getByRole('button', { name: 'Remove filter Mailbox provider = gmail' }).click();
    await shows(expectedRows(SPECS, (s) => [s.category ?? '']));

    // Client and device: of the first human open or click.
    await section.getByLabel('Breakdown by', { exact: true }).selectOption({ label: 'Client' });
    await shows(expectedRows(SPECS, (s) => [s.client ?? '']));
    await section.getByLabel('Breakdown by', { exact: true }).selectOption({ label: 'Device' });
    await shows(expectedRows(SPECS, (s) => [s.device ?? '']));
    await section.getByLabel('Breakdown by', { exact: true }).selectOption({ label: 'Template' });
    await shows(expectedRows(SPECS, (s) => [s.templated ? templateId : '']));

    // One local (UTC) day by hour: the chart's figures put each provider's emails in their hour.
    const day = utcDay(BASE);
    await section.getByLabel('Breakdown by', { exact: true }).selectOption({ label: 'Mailbox provider' });
    await section.getByLabel('Interval', { exact: true }).selectOption({ label: 'Hour' });
    await section.getByLabel('From', { exact: true }).fill(day);
    await section.getByLabel('To', { exact: true }).fill(day);
    const thatDay = SPECS.filter((_, i) => utcDay(queuedAt(i)) === day);
    await shows(expectedRows(thatDay, (s) => [s.provider]));
    expect(await section.getByTestId('breakdown-period').textContent()).toContain(`${day} to ${day} (UTC)`);
    await section.getByText('Chart figures as a table').click();
    const series = section.getByRole('region', { name: 'Chart figures' }).locator('table');
    expect(await series.locator('tbody tr').count()).toBe(24);
    const providers = ['gmail', 'outlook', 'yahoo'].filter((p) => thatDay.some((s) => s.provider === p));
    expect(await series.locator('thead th').allTextContents()).toEqual(['Hour (UTC)', ...providers]);
    const hours = new Set(
      SPECS.map((_, i) => queuedAt(i))
        .filter((ms) => utcDay(ms) === day)
        .map(utcHour),
    );
    for (const hour of hours) {
      const inHour = SPECS.filter((_, i) => utcHour(queuedAt(i)) === hour);
      const row = series.locator('tbody tr', { has: w.page.locator('th', { hasText: hour }) });
      expect(await row.locator('td').allTextContents(), hour).toEqual(
        providers.map((p) => String(inHour.filter((s) => s.provider === p).length)),
      );
    }
    // The chart draws the figure chosen: clicks per provider.
    await section.getByLabel('Chart figure', { exact: true }).selectOption({ label: 'Clicked' });
    const clicks = (p: string) => thatDay.filter((s) => s.provider === p && s.click).length;
    expect(
      await section.getByRole('img', { name: /^Clicked by mailbox provider/ }).getAttribute('aria-label'),
    ).toBe(
      `Clicked by mailbox provider over 24 hours: ${providers.map((p) => `${p} ${clicks(p)}`).join(', ')}.`,
    );
    // The choices live in the address: a reload (or a shared link) shows the same breakdown.
    await section.getByLabel('Filter by', { exact: true }).selectOption({ label: 'Tag' });
    await section.getByLabel('Filter value', { exact: true }).fill('welcome');
    await section.getByRole('button', { name: 'Add filter' }).click();
    const welcome = thatDay.filter((s) => s.tags.includes('welcome'));
    await shows(expectedRows(welcome, (s) => [s.provider]));
    const address = new URLSearchParams((await w.page.evaluate(() => window.location.hash)).split('?')[1]);
    expect(Object.fromEntries(address)).toMatchObject({
      by: 'provider',
      interval: 'hour',
      from: day,
      to: day,
      figure: 'clicked',
      'f.tag': 'welcome',
    });
    await w.page.reload();
    await shows(expectedRows(welcome, (s) => [s.provider]));
    expect(await section.getByLabel('Chart figure', { exact: true }).inputValue()).toBe('clicked');
    expect(await section.getByLabel('Interval', { exact: true }).inputValue()).toBe('hour');
    expect(await section.getByLabel('From', { exact: true }).inputValue()).toBe(day);
    await section.getByRole('button', { name: 'Remove filter Tag = welcome' }).click();
    await shows(expectedRows(thatDay, (s) => [s.provider]));
    expect(w.calls.filter((c) => c === 'GET /analytics/breakdown').length).toBeGreaterThan(5);
    await checkPage(w, 'overview-breakdown');
    await w.page.close();
  });

  it('deliverability: per mailbox provider, the rates and the median and p95 time to delivery of the events', async () => {
    const w = await open('/deliverability');
    await w.page.getByRole('heading', { name: 'Deliverability', level: 1 }).waitFor();
    await w.page.getByRole('button', { name: '7 days' }).click();
    const table = w.page.getByRole('region', { name: 'Deliverability by mailbox provider' }).locator('table');
    await w.page.locator('[data-testid="deliverability"][data-days="7"][aria-busy="false"]').waitFor();
    const expected = ['gmail', 'outlook', 'yahoo']
      .map((p) => ({ p, specs: SPECS.filter((s) => s.provider === p) }))
      .sort((a, b) => b.specs.length - a.specs.length || (a.p < b.p ? -1 : 1))
      .map(({ p, specs }) => {
        const c = count(specs);
        const times = specs.filter((s) => s.outcome === 'delivered').map((s) => s.deliverS!);
        return [
          p,
          String(c.total),
          String(c.sent),
          String(c.delivered),
          pct(c.delivered, c.sent),
          pct(c.bounced, c.total),
          pct(c.complained, c.sent),
          pct(c.delayed, c.total),
          seconds(quantile(times, 0.5)),
          seconds(quantile(times, 0.95)),
        ];
      });
    const rows = await table
      .locator('tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => Array.from(tr.querySelectorAll('th, td')).map((c) => c.textContent?.trim() ?? '')),
      );
    expect([...rows].sort()).toEqual([...expected].sort());
    // The figures that tell the providers apart, spelled out: gmail's median 6 s and p95 10 s.
    expect(rows.find((r) => r[0] === 'gmail')?.slice(7)).toEqual(['20.0%', '6.0 s', '10 s']);
    expect(w.calls).toContain('GET /analytics/deliverability');
    await checkPage(w, 'deliverability');
    await w.page.close();
  });

  it("a domain's DMARC tab: the sources a report mailed to the tenant names, by IP, with aligned DKIM and SPF", async () => {
    const name = 'dmarc-dash.example.com';
    const domain = await apiWrite<{ id: string }>(tern, 'POST', '/domains', { name });
    const inbound = await api<{ domain: string }>(tern, '/inbound/domain');
    const xml = reportXml({
      domain: name,
      org: 'Yahoo',
      reportId: `dash-${Date.now()}`,
      rows: [
        { ip: '203.0.113.5', count: 120 },
        { ip: '198.51.100.9', count: 3, disposition: 'reject', dkim: 'fail', spf: 'fail' },
        { ip: '192.0.2.44', count: 7, disposition: 'quarantine', dkim: 'pass', spf: 'fail' },
      ],
    });
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: inject('dashboard').inboundPort,
      secure: false,
      ignoreTLS: true,
    });
    try {
      const info = await transport.sendMail({
        from: 'noreply@yahoo.com',
        to: `dmarc@${inbound.domain}`,
        subject: `Report Domain: ${name} Submitter: yahoo.com`,
        text: 'This is an aggregate report.',
        attachments: [
          {
            filename: `yahoo.com!${name}!1700000000!1700086399.xml.gz`,
            content: gzip(xml),
            contentType: 'application/gzip',
          },
        ],
      });
      expect(info.response).toMatch(/^250 /);
    } finally {
      transport.close();
    }

    const w = await open('/domains');
    await w.page.getByRole('button', { name: `DMARC reports of ${name}` }).click();
    const tab = w.page.getByRole('tab', { name: 'DMARC reports' });
    expect(await tab.getAttribute('aria-selected')).toBe('true');
    const panel = w.page.getByRole('tabpanel');
    await panel.getByRole('heading', { name: `DMARC reports for ${name}` }).waitFor();
    const table = panel.getByRole('region', { name: `DMARC sources of ${name}` }).locator('table');
    await table.waitFor();
    expect(await panel.getByTestId('dmarc-reports').textContent()).toBe('1');
    expect(await panel.getByTestId('dmarc-messages').textContent()).toBe('130');
    const rows = await table.locator('tbody tr').evaluateAll((trs) =>
      trs.map((tr) =>
        Array.from(tr.querySelectorAll('th, td'))
          .slice(0, 9)
          .map((c) => c.textContent?.trim() ?? ''),
      ),
    );
    // Most mail first; DKIM and SPF are the DMARC-aligned results; the reporter is the report's org.
    expect(rows).toEqual([
      ['203.0.113.5', '120', '120', '0', '120', '0', '0', '0', 'Yahoo'],
      ['192.0.2.44', '7', '7', '0', '0', '7', '7', '0', 'Yahoo'],
      ['198.51.100.9', '3', '0', '3', '0', '3', '0', '3', 'Yahoo'],
    ]);
    expect(w.calls).toContain(`GET /domains/${domain.id}/dmarc`);
    // Arrow keys move between the tabs: back to the records.
    await tab.focus();
    await w.page.keyboard.press('ArrowLeft');
    await w.page.getByTestId('domain-records').waitFor();
    expect(await w.page.getByRole('tab', { name: 'Records' }).getAttribute('aria-selected')).toBe('true');
    await w.page.getByRole('tab', { name: 'DMARC reports' }).click();
    await table.waitFor();
    await checkPage(w, 'domain-dmarc');
    await w.page.close();
  });

  it('logs: recipient search, tag, template, date range and status are the API parameters; the rows are those of the events', async () => {
    const w = await open('/logs');
    const table = w.page
      .getByRole('table')
      .filter({ has: w.page.getByRole('columnheader', { name: 'Recipient' }) });
    const recipients = async () => {
      await w.page
        .locator('[data-testid="logs"][aria-busy="false"], [data-testid="empty"]')
        .first()
        .waitFor();
      return (await table.locator('tbody th').allTextContents()).map((t) => t.trim()).sort();
    };
    const all = SPECS.map((s) => s.to).sort();
    await expect.poll(recipients).toEqual(all);
    // Tags are a column; so are the opened / clicked / complained flags, each row as its events say.
    const g1 = table.locator('tbody tr', { hasText: 'g1@gmail.com' });
    expect((await g1.locator('td').allTextContents())[2]).toBe('receipt');
    const yes = (b: boolean) => (b ? 'Yes' : 'No');
    for (const s of SPECS) {
      const cells = await table
        .locator('tbody tr', { has: w.page.getByRole('rowheader', { name: s.to, exact: true }) })
        .locator('td')
        .allTextContents();
      expect(cells.slice(3, 6), s.to).toEqual([
        yes(s.ua !== undefined),
        yes(s.click === true),
        yes(s.complain === true),
      ]);
    }
    expect(SPECS.some((s) => s.ua !== undefined) && SPECS.some((s) => s.ua === undefined)).toBe(true);

    await w.page.getByLabel('Tag', { exact: true }).fill('welcome');
    await w.page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(recipients).toEqual(
      SPECS.filter((s) => s.tags.includes('welcome'))
        .map((s) => s.to)
        .sort(),
    );
    expect(new URL(w.page.url()).hash).toContain('tag=welcome');

    // Recipient prefix AND tag.
    await w.page.getByLabel('Tag', { exact: true }).fill('receipt');
    await w.page.getByLabel('Recipient', { exact: true }).fill('O');
    await w.page.getByRole('button', { name: 'Apply' }).click();
    const receiptO = SPECS.filter((s) => s.tags.includes('receipt') && s.to.startsWith('o')).map((s) => s.to);
    await expect.poll(recipients).toEqual(receiptO.sort());
    await expect.poll(() => w.page.getByTestId('logs-total').textContent()).toBe(`${receiptO.length} emails`);

    // The template menu names the tenant's templates; it is the API's `templateId`.
    await w.page.getByLabel('Template', { exact: true }).selectOption({ label: 'Receipt' });
    await expect.poll(recipients).toEqual(
      SPECS.filter((s) => s.templated && s.tags.includes('receipt') && s.to.startsWith('o'))
        .map((s) => s.to)
        .sort(),
    );
    expect(new URL(w.page.url()).hash).toMatch(/template=tpl_/);
    // The status menu combines with them: the bounced one among those.
    await w.page.getByLabel('Status', { exact: true }).selectOption('BOUNCED');
    await expect.poll(recipients).toEqual(['o2@outlook.com']);

    // The template alone: every email rendered from it.
    await w.page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(recipients).toEqual(all);
    await w.page.getByLabel('Template', { exact: true }).selectOption({ label: 'Receipt' });
    await expect.poll(recipients).toEqual(
      SPECS.filter((s) => s.templated)
        .map((s) => s.to)
        .sort(),
    );
    // A date range after the emails: nothing; the range of their day: all of them again.
    await w.page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(recipients).toEqual(all);
    const tomorrow = utcDay(Date.now() + 86_400_000);
    await w.page.getByLabel('From (UTC)', { exact: true }).fill(tomorrow);
    await w.page.getByRole('button', { name: 'Apply' }).click();
    await w.page.getByText('No email matches this view.').waitFor();
    expect(await w.page.getByTestId('logs-total').textContent()).toBe('0 emails');
    const days = [...new Set(SPECS.map((_, i) => utcDay(queuedAt(i))))].sort();
    await w.page.getByLabel('From (UTC)', { exact: true }).fill(days[0]!);
    await w.page.getByLabel('To (UTC)', { exact: true }).fill(days.at(-1)!);
    await w.page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(recipients).toEqual(all);
    const hash = new URL(w.page.url()).hash;
    expect(hash).toContain(`from=${days[0]}`);
    expect(hash).toContain(`to=${days.at(-1)}`);
    await checkPage(w, 'logs-filters');
    await w.page.close();
  });
});
