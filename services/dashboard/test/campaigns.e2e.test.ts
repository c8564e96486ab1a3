/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * The campaigns page (SPEC §15, issue 30) in Chromium against the run's Tern: a campaign written
 * in the browser with its live preview, its audience's reach, sent to 50 contacts through the
 * sandbox and followed to `sent` without a reload, its stats and daily chart equal to the API's;
 * then a scheduled one cancelled, and one from a template.
 */
import { describe, expect, it } from 'vitest';
import { api, apiWrite, checkPage, dashboardFile, type Outcomes, screenshot, type Tern } from './fixture.js';

interface Stats extends Outcomes {
  recipients: number;
  unsubscribed: number;
}
interface Campaign {
  id: string;
  status: string;
  scheduledAt: string | null;
  stats: Stats;
}
interface Day {
  date: string;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
}

const READERS = 48;

/** The audience: 48 readers and two sandbox outcomes (50 reachable), one unsubscribed, one suppressed. */
function audienceCsv(): string {
  const rows = ['email,first_name,subscribed,audiences'];
  for (let i = 1; i <= READERS; i++) rows.push(`reader${i}@example.com,Reader${i},true,newsletter`);
  rows.push('bounced@sandbox.test,Bo,true,newsletter');
  rows.push('complained@sandbox.test,Cy,true,newsletter');
  rows.push('gone@example.com,Gone,false,newsletter');
  rows.push('blocked@example.com,Blocked,true,newsletter');
  rows.push('elsewhere@example.com,Else,true,other');
  return `${rows.join('\n')}\n`;
}

describe('the campaigns page, in Chromium', () => {
  const { tern, open } = dashboardFile('campaigns', {
    seed: async (tern) => {
      const imported = await apiWrite<{ created: number }>(
        tern,
        'POST',
        '/contacts/import',
        audienceCsv(),
        200,
      );
      expect(imported.created).toBe(READERS + 5);
      await apiWrite(tern, 'POST', '/suppressions', { email: 'blocked@example.com' });
    },
  });

  it('writes a campaign with a live, sandboxed preview, sends it to 50 contacts and follows it to sent: stats and daily chart as the API has them', async () => {
    const w = await open('/campaigns');
    // Nothing yet: the empty state says what to do first.
    await w.page.getByTestId('empty').getByText('No campaign yet.').waitFor();
    await checkPage(w, 'campaigns-empty');

    await w.page.getByRole('link', { name: 'New campaign' }).click();
    await w.page.getByRole('heading', { name: 'New campaign' }).waitFor();
    await w.page.getByLabel('Name').fill('June newsletter');
    await w.page.getByLabel('From', { exact: true }).fill('Acme <news@acme.test>');
    await w.page.getByLabel('Audience').fill('newsletter');
    // The reach is the API's own count: subscribed, not suppressed (the unsubscribed and the
    // suppressed contact are left out).
    const audience = await api<{ data: { reachable: number; contacts: number; subscribed: number }[] }>(
      tern,
      '/audiences?name=newsletter',
    );
    expect(audience.data[0]).toEqual({ name: 'newsletter', contacts: 52, subscribed: 51, reachable: 50 });
    await expect
      .poll(() => w.page.getByTestId('reach').textContent())
      .toBe(
        'Reaches 50 contacts now (52 in the audience, 51 subscribed; suppressed addresses are left out).',
      );

    // The preview follows the typing; the HTML is shown only inside a sandboxed frame.
    await w.page.getByLabel('Subject').fill('June news for {{firstName}} <b>bold?</b>');
    const html =
      '<h1 class="headline">Hello {{firstName}}</h1><p>Our <em>June</em> news &amp; more: ' +
      '<a href="https://acme.test/june">read it</a>.</p>';
    await w.page.getByLabel('HTML').fill(html);
    await w.page.getByLabel('Text').fill('Hello {{firstName}}, our June news.');
    await expect
      .poll(() => w.page.getByTestId('preview-subject').textContent())
      .toBe('June news for {{firstName}} <b>bold?</b>');
    const frame = w.page.frameLocator('iframe[title="Campaign preview"]');
    await expect.poll(() => frame.locator('h1.headline').textContent()).toBe('Hello {{firstName}}');
    await w.page.getByLabel('HTML').fill(html.replace('Hello', 'Hi'));
    await expect.poll(() => frame.locator('h1.headline').textContent()).toBe('Hi {{firstName}}');
    expect(await w.page.locator('iframe[title="Campaign preview"]').getAttribute('sandbox')).toBe('');
    // Not one element of the typed HTML exists in the dashboard's own document.
    expect(await w.page.locator('h1.headline, main b, main em').count()).toBe(0);
    await checkPage(w, 'campaign-new');

    await w.page.getByRole('button', { name: 'Create draft' }).click();
    await w.page.waitForURL(/#\/campaigns\/cmp_/);
    const id = decodeURIComponent(new URL(w.page.url()).hash.split('/')[2]!.split('?')[0]!);
    await w.page.locator('[data-testid="campaign"][data-status="draft"]').waitFor();
    const draft = await api<Campaign & { subject: string; html: string; text: string }>(
      tern,
      `/campaigns/${id}`,
    );
    expect(draft).toMatchObject({
      status: 'draft',
      subject: 'June news for {{firstName}} <b>bold?</b>',
      html: html.replace('Hello', 'Hi'),
      text: 'Hello {{firstName}}, our June news.',
    });

    // Send, then follow it without reloading the page (the marker survives only without a reload).
    await w.page.evaluate(() => {
      (window as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    await w.page.getByRole('button', { name: 'Send now' }).click();
    await w.page.locator('[data-testid="campaign"][data-status="sent"]').waitFor({ timeout: 60_000 });
    // Every email reaches its outcome in the sandbox (the bounce and the complaint included).
    const settled = await waitForApi(tern, id, (c) => c.stats.delivered + c.stats.bounced === 50);
    expect(settled.stats).toMatchObject({
      recipients: 50,
      sent: 50,
      delivered: 49,
      bounced: 1,
      complained: 1,
    });
    // The page stops polling once the figures settle, showing exactly the API's.
    await w.page.locator('[data-testid="campaign"][data-live="false"]').waitFor({ timeout: 30_000 });
    const final = await api<Campaign>(tern, `/campaigns/${id}`);
    const shown = async () =>
      Object.fromEntries(
        await Promise.all(
          Object.keys(final.stats).map(async (k) => [
            k,
            Number(await w.page.getByTestId(`stat-${k}`).textContent()),
          ]),
        ),
      );
    expect(await shown()).toEqual(final.stats);
    expect(await w.page.getByTestId('cmp-progressbar').textContent()).toContain('50 of 50 sent');
    expect(await w.page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(
      true,
    );
    // The page followed the campaign by reading it again (GET /campaigns/:id more than once).
    expect(w.calls.filter((c) => c === `GET /campaigns/${id}`).length).toBeGreaterThan(2);

    // Readers open (the pixel) and click (the rewritten link) in their mail clients, after the page
    // settled: "Refresh" reads the campaign and its chart again.
    const opened = await readMail(tern, id, 12, 5);
    const after = await waitForApi(
      tern,
      id,
      (c) => c.stats.opened === opened.opens && c.stats.clicked === opened.clicks,
    );
    await w.page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(shown).toEqual(after.stats);
    expect(after.stats).toMatchObject({ opened: 12, clicked: 5 });
    await checkPage(w, 'campaign-sent');
    // The README's picture of the page (docs/dashboard-campaign.png is copied from this one).
    await w.page.setViewportSize({ width: 1280, height: 1160 });
    await screenshot(w.page, 'campaign-sent-window', false);
    await w.page.setViewportSize({ width: 1280, height: 900 });

    // The daily chart: its table is the API's answer, day by day (7 days, then 30).
    await w.page.getByRole('button', { name: '30 days' }).click();
    await w.page.getByRole('heading', { name: 'Daily, last 30 days' }).waitFor();
    const daily = await api<{ daily: Day[] }>(tern, `/campaigns/${id}/daily?days=30`);
    await w.page.getByText('Daily figures as a table').click();
    const rows = await w.page
      .locator('[data-testid="daily-table"] tbody tr')
      .evaluateAll((trs) => trs.map((tr) => Array.from(tr.children).map((c) => c.textContent)));
    expect(rows).toEqual(
      daily.daily.map((d) => [d.date, ...[d.sent, d.delivered, d.opened, d.clicked, d.bounced].map(String)]),
    );
    const today = daily.daily.at(-1)!;
    expect(today).toMatchObject({ sent: 50, delivered: 49, opened: 12, clicked: 5, bounced: 1 });

    // The list shows it sent, with its count.
    await w.page.getByRole('link', { name: '← Campaigns' }).click();
    const row = w.page.locator('[data-testid="campaigns"] tbody tr', { hasText: 'June newsletter' });
    await row.waitFor();
    expect(await row.locator('td').allTextContents()).toEqual(
      expect.arrayContaining(['sent', 'newsletter', '50 of 50']),
    );
    await checkPage(w, 'campaigns');
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('schedules a draft (it waits), cancels it (it never sends); a template campaign previews the API’s rendering', async () => {
    const template = await apiWrite<{ id: string }>(tern, 'POST', '/templates', {
      name: 'Monthly',
      subject: 'Monthly for {{firstName}}',
      html: '<p class="greeting">Dear {{firstName}} {{lastName}}</p>',
    });
    const w = await open('/campaigns/new');
    await w.page.getByLabel('Name').fill('July from template');
    await w.page.getByLabel('From', { exact: true }).fill('news@acme.test');
    await w.page.getByLabel('Audience').fill('other');
    await expect.poll(() => w.page.getByTestId('reach').textContent()).toContain('Reaches 1 contacts now');
    await w.page.getByLabel('From a template').check();
    await w.page.getByLabel('Template', { exact: true }).selectOption(template.id);
    // The API's renderer, for the sample contact: escaped values, the template's own subject.
    await expect.poll(() => w.page.getByTestId('preview-subject').textContent()).toBe('Monthly for Ada');
    const frame = w.page.frameLocator('iframe[title="Campaign preview"]');
    await expect.poll(() => frame.locator('p.greeting').textContent()).toBe('Dear Ada Lovelace');
    expect(w.calls).toContain(`POST /templates/${template.id}/render`);
    await w.page.getByRole('button', { name: 'Create draft' }).click();
    await w.page.waitForURL(/#\/campaigns\/cmp_/);
    const id = decodeURIComponent(new URL(w.page.url()).hash.split('/')[2]!.split('?')[0]!);
    await w.page.locator('[data-testid="campaign"][data-status="draft"]').waitFor();
    expect(await api<{ templateId: string; subject: string | null }>(tern, `/campaigns/${id}`)).toMatchObject(
      {
        templateId: template.id,
        subject: null,
      },
    );

    // Tomorrow at 09:30, typed in the browser's local time.
    const local = await w.page.evaluate(() => {
      const d = new Date(Date.now() + 86_400_000);
      d.setHours(9, 30, 0, 0);
      const p = (n: number) => String(n).padStart(2, '0');
      return {
        value: `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`,
        iso: d.toISOString(),
      };
    });
    await w.page.getByLabel(/Or send at/).fill(local.value);
    await w.page.getByRole('button', { name: 'Schedule' }).click();
    await w.page.locator('[data-testid="campaign"][data-status="scheduled"]').waitFor();
    const scheduled = await api<Campaign>(tern, `/campaigns/${id}`);
    expect(scheduled).toMatchObject({ status: 'scheduled', scheduledAt: local.iso });
    await checkPage(w, 'campaign-scheduled');
    await w.page.getByRole('button', { name: 'Cancel campaign' }).click();
    await w.page.locator('[data-testid="campaign"][data-status="cancelled"]').waitFor();
    expect((await api<Campaign>(tern, `/campaigns/${id}`)).status).toBe('cancelled');
    expect(w.errors).toEqual([]);
    await w.page.close();
  });
});

/**
 * What recipients' mail clients do: load the open pixel of `opens` emails of the campaign and
 * follow the tracked link of `clicks` of them (URLs from the sandbox's kept copies of the mail).
 */
async function readMail(tern: Tern, id: string, opens: number, clicks: number) {
  const logs = await api<{ data: { id: string; toEmail: string }[] }>(
    tern,
    `/emails/logs?tag=${encodeURIComponent(`campaign:${id}`)}&limit=100`,
  );
  const readers = logs.data.filter((e) => e.toEmail.startsWith('reader')).slice(0, opens);
  expect(readers).toHaveLength(opens);
  const client = {
    'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Thunderbird/128.0',
  };
  for (const [i, e] of readers.entries()) {
    const { html } = await api<{ html: string }>(tern, `/emails/${e.id}/content`);
    const pixel = /"(https?:\/\/[^"]+\/t\/o\/[^"]+)"/.exec(html)?.[1];
    const link = /"(https?:\/\/[^"]+\/t\/c\/[^"]+)"/.exec(html)?.[1];
    expect(pixel && link, html).toBeTruthy();
    expect((await fetch(pixel!.replaceAll('&amp;', '&'), { headers: client })).status).toBe(200);
    if (i < clicks) {
      const res = await fetch(link!.replaceAll('&amp;', '&'), { headers: client, redirect: 'manual' });
      expect(res.status).toBe(302);
    }
  }
  return { opens, clicks };
}

/** Polls `GET /campaigns/:id` until `done` (bounded: the sandbox answers within seconds). */
async function waitForApi(tern: Tern, id: string, done: (c: Campaign) => boolean): Promise<Campaign> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const c = await api<Campaign>(tern, `/campaigns/${id}`);
    if (done(c)) return c;
    if (Date.now() > deadline) throw new Error(`campaign ${id} did not settle: ${JSON.stringify(c)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
