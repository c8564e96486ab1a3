/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { api, checkPage, dashboardFile, expectPublicApiOnly, newPage, rowIds, TENANT } from './fixture.js';

const EMAILS = 45;

interface Summary {
  totals: Record<'total' | 'sent' | 'opened' | 'clicked' | 'bounced' | 'complained' | 'failed', number>;
  rates: Record<'openRate' | 'clickRate' | 'bounceRate' | 'complaintRate', number>;
}
interface Logs {
  data: { id: string; status: string }[];
  meta: { total: number; totalPages: number };
}

/** A JWT of the demo tenant, well-formed and unexpired, signed with a key Tern does not know. */
function forgedJwt(): string {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ tenantId: 'demo', role: 'owner', exp: Math.floor(Date.now() / 1000) + 3600 })}`;
  return `${body}.${createHmac('sha256', 'not-the-secret').update(body).digest('base64url')}`;
}

describe('the dashboard in Chromium, against a running Tern', () => {
  const { tern, browser, open } = dashboardFile(TENANT, { emails: EMAILS });

  it('GET / is the dashboard, under a strict CSP; the banner prints the one-click link', async () => {
    expect(tern.link).toBe(`${tern.url}/#token=${tern.jwt}`);
    const res = await fetch(`${tern.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const html = await res.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${tern.url}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  });

  it('signs in from the banner link: the token leaves the address bar for sessionStorage', async () => {
    const w = await newPage(browser);
    await w.page.goto(tern.link);
    await expect.poll(() => w.page.getByTestId('tenant').textContent()).toBe('demo · owner');
    expect(new URL(w.page.url()).hash).toBe('#/');
    expect(await w.page.evaluate(() => sessionStorage.getItem('tern.jwt'))).toBe(tern.jwt);
    // A reload keeps the session; signing out ends it.
    await w.page.reload();
    await w.page.getByTestId('tenant').waitFor();
    await w.page.getByRole('button', { name: 'Sign out' }).click();
    await w.page.getByRole('heading', { name: 'Sign in to Tern' }).waitFor();
    expect(await w.page.evaluate(() => sessionStorage.getItem('tern.jwt'))).toBeNull();
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('a pasted token signs in; a malformed one is refused on the page', async () => {
    const w = await newPage(browser);
    await w.page.goto(`${tern.url}/`);
    await w.page.getByLabel('Dashboard token (JWT)').fill('not a token');
    await w.page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => w.page.getByRole('alert').textContent()).toContain('not a JWT');
    await checkPage(w, 'sign-in');
    await w.page.getByLabel('Dashboard token (JWT)').fill(tern.jwt);
    await w.page.getByRole('button', { name: 'Sign in' }).click();
    await w.page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('a 401 from the API takes the user back to sign-in', async () => {
    const w = await newPage(browser);
    await w.page.goto(`${tern.url}/#token=${forgedJwt()}`);
    await w.page.getByRole('heading', { name: 'Sign in to Tern' }).waitFor();
    await expect.poll(() => w.page.getByRole('status').first().textContent()).toContain('401');
    expect(await w.page.evaluate(() => sessionStorage.getItem('tern.jwt'))).toBeNull();
    // The browser reports the refused requests themselves, and nothing else.
    expect(w.errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    await w.page.close();
  });

  it('overview: the cards equal the API summary for 7, 30 and 90 days; chart, top templates, as-of', async () => {
    const w = await open();
    for (const days of [7, 30, 90]) {
      await w.page.getByRole('button', { name: `${days} days` }).click();
      await w.page.locator(`[data-testid="overview"][data-days="${days}"][aria-busy="false"]`).waitFor();
      expect(await w.page.getByRole('button', { name: `${days} days` }).getAttribute('aria-pressed')).toBe(
        'true',
      );
      const summary = await api<Summary>(tern, `/analytics/summary?days=${days}`);
      const shown = async (id: string) => (await w.page.getByTestId(id).textContent())?.trim();
      for (const [k, v] of Object.entries(summary.totals))
        expect(await shown(`total-${k}`), `${days}d ${k}`).toBe(String(v));
      expect(await shown('rate-opened')).toBe(`${summary.rates.openRate.toFixed(1)}%`);
      expect(await shown('rate-clicked')).toBe(`${summary.rates.clickRate.toFixed(1)}%`);
      expect(await shown('rate-bounced')).toBe(`${summary.rates.bounceRate.toFixed(1)}%`);
      expect(await shown('rate-complained')).toBe(`${summary.rates.complaintRate.toFixed(1)}%`);
      const top = await api<{ top: { name: string }[] }>(tern, `/analytics/top-templates?days=${days}`);
      const names = await w.page.locator('[data-testid="top-templates"] tbody th').allTextContents();
      expect(names).toEqual(top.top.map((t) => t.name));
    }
    // The three periods really differ on this data, so the switch is seen to change the figures.
    const totals = await Promise.all(
      [7, 30, 90].map((d) => api<Summary>(tern, `/analytics/summary?days=${d}`)),
    );
    expect(new Set(totals.map((s) => s.totals.total)).size).toBe(3);
    expect(await w.page.getByTestId('as-of').textContent()).toMatch(/as of \d{4}-\d{2}-\d{2} /);
    expect(await w.page.locator('.chart canvas').count()).toBeGreaterThan(0);
    await checkPage(w, 'overview');
    await w.page.close();
  });

  it('logs: pages through every email newest first, exactly as the API pages them', async () => {
    const w = await open('/logs');
    const first = await api<Logs>(tern, '/emails/logs?page=1&limit=20');
    expect(first.meta.totalPages).toBe(3);
    for (let page = 1; page <= 3; page++) {
      const expected = await api<Logs>(tern, `/emails/logs?page=${page}&limit=20`);
      await expect.poll(() => w.page.getByText(`Page ${page} of 3`).count()).toBe(1);
      await expect.poll(() => rowIds(w.page, 'logs')).toEqual(expected.data.map((e) => e.id));
      if (page < 3) await w.page.getByRole('button', { name: 'Older →' }).click();
    }
    expect(await w.page.getByRole('button', { name: 'Older →' }).isDisabled()).toBe(true);
    await w.page.getByRole('button', { name: '← Newer' }).click();
    await expect.poll(() => w.page.getByText('Page 2 of 3').count()).toBe(1);
    // The page is in the address: a reload (or Back from an email) shows the same page.
    expect(new URL(w.page.url()).hash).toBe('#/logs?page=2');
    await w.page.reload();
    await expect.poll(() => w.page.getByText('Page 2 of 3').count()).toBe(1);
    await w.page.goBack();
    await expect.poll(() => w.page.getByText('Page 3 of 3').count()).toBe(1);
    expect(await w.page.getByTestId('logs-total').textContent()).toBe(`${EMAILS} emails`);
    await checkPage(w, 'logs');
    await w.page.close();
  });

  it('logs: the status filter is sent as `status`, and the API applies it: those rows, their exact total', async () => {
    const w = await open('/logs');
    await w.page.locator('[data-testid="logs"]').waitFor();
    const request = w.page.waitForRequest(
      (r) => r.url().includes('/emails/logs') && r.url().includes('status=BOUNCED'),
    );
    await w.page.getByLabel('Status').selectOption('BOUNCED');
    const url = new URL((await request).url());
    expect(url.searchParams.get('page')).toBe('1');
    const answer = await api<Logs>(tern, `/emails/logs${url.search}`);
    await expect.poll(() => rowIds(w.page, 'logs')).toEqual(answer.data.map((e) => e.id));
    // The API filters (SPEC §19): only bounced rows, and the total of the bounced ones in the whole log.
    const everything = await api<Logs>(tern, '/emails/logs?limit=100');
    expect(everything.meta.total).toBeLessThanOrEqual(100);
    const bounced = everything.data.filter((e) => e.status === 'BOUNCED');
    expect(bounced.length).toBeGreaterThan(0);
    expect(answer.data.map((e) => e.id)).toEqual(bounced.map((e) => e.id).slice(0, 20));
    expect(answer.meta.total).toBe(bounced.length);
    await expect.poll(() => w.page.getByTestId('logs-total').textContent()).toBe(`${bounced.length} emails`);
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('API keys: create one with chosen scopes, shown once; it works; revoke it and it is refused', async () => {
    const w = await open('/api-keys');
    await w.page.getByLabel('Name').fill('browser test key');
    await w.page.getByRole('checkbox', { name: 'email:send' }).uncheck();
    await w.page.getByRole('checkbox', { name: 'email:read' }).check();
    await w.page.getByRole('button', { name: 'Create key' }).click();
    const key = (await w.page.getByTestId('shown-once').textContent())?.trim() ?? '';
    expect(key).toMatch(/^tern_[A-Za-z0-9]{32,}$/);
    const row = w.page.locator('[data-testid="api-keys"] tbody tr', { hasText: 'browser test key' });
    await row.waitFor();
    expect(await row.textContent()).toContain('email:read');
    expect(await row.textContent()).not.toContain('email:send');
    // The key reads the logs through the public API, like a user's own program would.
    const withKey = () =>
      fetch(`${tern.url}/emails/logs`, { headers: { 'x-api-key': key } }).then((r) => r.status);
    expect(await withKey()).toBe(200);
    await checkPage(w, 'api-keys');
    // Shown once: after "Done" the key is nowhere on the page, and the list has only its prefix.
    await w.page.getByRole('button', { name: 'Done' }).click();
    expect(await w.page.content()).not.toContain(key);
    await row.getByRole('button', { name: 'Revoke browser test key' }).click();
    await row.getByRole('button', { name: 'Confirm revoke' }).click();
    await row.getByText('revoked').waitFor();
    expect(await withKey()).toBe(401);
    expect(w.calls).toContain(`DELETE /tenants/demo/api-keys/${await row.getAttribute('data-id')}`);
    await expectPublicApiOnly(w, 'api-keys');
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('a member sees the figures but no admin action', async () => {
    const w = await open('/', { token: tern.token('member') });
    expect(await w.page.getByTestId('tenant').textContent()).toBe('demo · member');
    await w.page.getByTestId('total-total').waitFor();
    await w.page.goto(`${tern.url}/#/api-keys`);
    await w.page.getByText('Only a tenant owner or admin manages API keys').waitFor();
    expect(await w.page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    expect(await w.page.getByRole('button', { name: /Revoke/ }).count()).toBe(0);
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('webhooks: create an endpoint (secret shown once), list it, replay, and read the deliveries as the API answers them', async () => {
    const w = await open('/webhooks');
    // Tern's own /health answers a POST with 404: every attempt fails with a known status code.
    await w.page.getByLabel('URL').fill(`${tern.url}/health`);
    await w.page.getByLabel('Description (optional)').fill('browser test');
    await w.page.getByRole('button', { name: 'Create endpoint' }).click();
    expect((await w.page.getByTestId('shown-once').textContent())?.trim()).toMatch(/^whsec_/);
    await w.page.getByRole('button', { name: 'Done' }).click();
    const item = w.page.locator('[data-testid="webhooks"] li', { hasText: 'browser test' });
    await item.getByText('all events').waitFor();
    await item.getByRole('button', { name: 'Deliveries' }).click();
    await item.getByTestId('deliveries').waitFor();
    // The newest seeded email (a minute old) has its events replayed from the log.
    await item.getByRole('button', { name: 'Replay' }).click();
    await item.getByText('Replay requested').waitFor();
    const row = item.locator('[data-testid="deliveries"] tbody tr').first();
    await expect
      .poll(
        async () => {
          await item.getByRole('button', { name: 'Refresh' }).click();
          return row.locator('td').nth(3).textContent();
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe('404');
    // The row shows what the API answers for that delivery: event, state, status code, duration, error.
    const id = (await row.getAttribute('data-id'))!;
    const hooks = await api<{ data: { id: string; description: string }[] }>(tern, '/webhooks');
    const hook = hooks.data.find((h) => h.description === 'browser test')!;
    const page = await api<{
      data: {
        id: string;
        eventType: string;
        replayId: string | null;
        lastStatusCode: number | null;
        lastError: string | null;
      }[];
    }>(tern, `/webhooks/${hook.id}/deliveries?limit=100`);
    const delivery = page.data.find((d) => d.id === id)!;
    expect(delivery.replayId).not.toBeNull();
    const cells = await row.locator('td').allTextContents();
    expect(cells[1]).toBe(delivery.eventType);
    expect(cells[2]).toContain('replay');
    expect(cells[3]).toBe(String(delivery.lastStatusCode));
    expect(cells[4]).toMatch(/^\d+ ms$/);
    expect(cells[5]).toBe(delivery.lastError ?? '');
    expect(cells[5]).not.toBe('');
    await checkPage(w, 'webhooks');
    await w.page.close();
  });

  it('works with the keyboard: skip link, then the navigation to the logs', async () => {
    const w = await open();
    await w.page.getByTestId('total-total').waitFor();
    await w.page.keyboard.press('Tab');
    expect(await w.page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await w.page.keyboard.press('Enter');
    expect(await w.page.evaluate(() => document.activeElement?.id)).toBe('page-title');
    // From the top again: Tab reaches the "Logs" link, Enter opens the page, focus lands on its title.
    // Shift+Tab lands on the header's last control; Tab then walks the overview's own controls (the
    // period, the chart's table, the breakdown's choices and filters) and wraps to the top.
    await w.page.keyboard.press('Shift+Tab');
    let reached = false;
    for (let i = 0; i < 40 && !reached; i++) {
      await w.page.keyboard.press('Tab');
      reached = (await w.page.evaluate(() => document.activeElement?.textContent)) === 'Logs';
    }
    expect(reached).toBe(true);
    await w.page.keyboard.press('Enter');
    await w.page.getByRole('heading', { name: 'Logs' }).waitFor();
    await expect.poll(() => w.page.evaluate(() => document.activeElement?.id)).toBe('page-title');
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  // The email pages (SPEC §11). Last: the send adds an email to the tenant the tests above count.
  it('logs: a row opens the email and its timeline, oldest event first', async () => {
    const w = await open('/logs');
    const first = w.page.locator('[data-testid="logs"] tbody tr').first();
    const id = await first.getAttribute('data-id');
    await first.getByRole('link').click();
    await w.page.getByRole('heading', { name: 'Email' }).waitFor();
    expect(new URL(w.page.url()).hash).toBe(`#/emails/${encodeURIComponent(id!)}`);
    // The heading shows before the email has loaded: wait for its timeline.
    await w.page.locator('[data-testid="timeline"] li').first().waitFor();
    const types = await w.page.locator('[data-testid="timeline"] li strong').allTextContents();
    expect(types[0]).toBe('email.queued');
    expect(types.length).toBeGreaterThan(1);
    await checkPage(w, 'email');
    await w.page.close();
  });

  it('send: a sandbox email is followed on its timeline until DELIVERED, with its content', async () => {
    const w = await open('/send');
    await w.page.getByLabel('To').fill('delivered@sandbox.test');
    await w.page.getByLabel('Subject').fill('Browser test');
    await w.page.getByLabel('Text').fill('Sent from the dashboard test.');
    await w.page.getByRole('button', { name: 'Send' }).click();
    // Not a bare heading 'Email' wait: the send page's own heading ("Send an email") would match it.
    await w.page.waitForURL(/#\/emails\/em_/);
    await w.page.getByRole('heading', { name: 'Email', exact: true }).waitFor();
    await expect
      .poll(() => w.page.getByTestId('email-status').textContent(), { timeout: 30_000 })
      .toBe('DELIVERED');
    const types = await w.page.locator('[data-testid="timeline"] li strong').allTextContents();
    expect(types).toEqual(expect.arrayContaining(['email.queued', 'email.sent', 'email.delivered']));
    await w.page.getByText('Sent from the dashboard test.').waitFor();
    await checkPage(w, 'send-timeline');
    await w.page.goto(`${tern.url}/#/send`);
    await w.page.getByRole('heading', { name: 'Send an email' }).waitFor();
    await checkPage(w, 'send');
    await w.page.close();
  });
});
