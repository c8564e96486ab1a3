/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * The Domains page (SPEC §20) in Chromium (the run's shared browser), against a built Tern process
 * of this file's own — its DNS checks resolve through a DNS server in this test process
 * (`DNS_SERVERS`) — doing what a new user does: add a domain, copy the records, publish them,
 * verify; and what the API then holds.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { signDashboardToken } from '@tern/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTern, type TernProcess } from '../../../test/e2e/tern-process.js';
import { startTestDnsServer, type TestDnsServer } from '../../../test/support/dns-server.js';
import { tempDir } from '../../../test/support/services.js';
import { api, type Browser, checkPage, launchBrowser, newPage, signIn, type Tern } from './harness.js';

const TENANT = 'domains';

/** A Tern of this file's own (the shared one resolves through the system's DNS), as the harness sees one. */
async function startDomainsTern(dnsServer: string): Promise<{ tern: Tern; process: TernProcess }> {
  const dataDir = tempDir('tern-dashboard-domains-');
  const proc = await startTern({
    // A second Tern next to the run's shared one: on a busy machine its start takes a while.
    readyTimeoutMs: 180_000,
    env: {
      DATA_DIR: dataDir,
      NODE_ENV: 'development',
      DNS_SERVERS: dnsServer,
      BOUNCE_MX_HOST: 'bounces.tern.test',
    },
  });
  const { jwtSecret, ingestToken } = JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8')) as {
    jwtSecret: string;
    ingestToken: string;
  };
  const token = (role: 'owner' | 'admin' | 'member') =>
    signDashboardToken({
      secret: jwtSecret,
      tenantId: TENANT,
      role,
      sub: `${role}-user`,
      expiresInSeconds: 3600,
    });
  return {
    process: proc,
    tern: {
      url: proc.url,
      link: `${proc.url}/#token=${token('owner')}`,
      tenant: TENANT,
      jwt: token('owner'),
      ingestToken,
      token,
    },
  };
}

interface Domain {
  id: string;
  name: string;
  status: string;
  reason: string | null;
  records: { purpose: string; type: string; name: string; value: string; status: string }[];
}

describe('the Domains page, in Chromium', () => {
  let tern: Tern;
  let proc: TernProcess;
  let browser: Browser;
  let dns: TestDnsServer;

  beforeAll(async () => {
    dns = await startTestDnsServer();
    ({ tern, process: proc } = await startDomainsTern(dns.server));
    browser = await launchBrowser();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await proc?.stop();
    await dns?.close();
  });

  it('an admin adds a domain, copies its records, publishes them and sees it verified; then deletes it', async () => {
    const name = `shop-${process.pid}.example.test`;
    const w = await newPage(browser);
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: tern.url });
    await signIn(w, tern, tern.token('admin'), '/domains');
    await w.page.getByRole('heading', { name: 'Domains', level: 1 }).waitFor();
    await w.page.getByLabel('Domain name').fill(name.toUpperCase());
    await w.page.keyboard.press('Enter');

    // The records panel: four rows, each pending, the values the API holds.
    const panel = w.page.getByTestId('domain-records');
    await panel.getByRole('heading', { name: `Records for ${name}` }).waitFor();
    const listed = await api<{ data: Domain[] }>(tern, '/domains');
    const domain = listed.data.find((d) => d.name === name)!;
    expect(domain.status).toBe('pending');
    const rows = panel.locator('[data-testid="records"] tbody tr');
    await expect.poll(() => rows.count()).toBe(4);
    for (const r of domain.records) {
      const row = panel.locator(`tr[data-purpose="${r.purpose}"]`);
      expect((await row.locator('code').allTextContents()).map((t) => t.trim())).toEqual([r.name, r.value]);
      expect((await row.locator('.badge').textContent())?.trim()).toBe('pending');
    }
    const dkim = domain.records.find((r) => r.purpose === 'dkim')!;
    await panel.getByRole('button', { name: 'Copy dkim value' }).click();
    await panel.getByRole('button', { name: 'Copied dkim value' }).waitFor();
    expect(await w.page.evaluate(() => navigator.clipboard.readText())).toBe(dkim.value);

    // A DKIM record published with a wrong value: "Verify now" names it; the row turns failed.
    dns.txt(dkim.name, 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtypo');
    await panel.getByRole('button', { name: 'Verify now' }).click();
    await expect
      .poll(() => panel.getByTestId('domain-reason').textContent())
      .toContain(`another value: ${dkim.name} (TXT)`);
    expect((await panel.locator('tr[data-purpose="dkim"] .badge').textContent())?.trim()).toBe('failed');

    // Published as shown (the copied value): verified.
    dns.remove(dkim.name);
    for (const r of domain.records) {
      if (r.purpose === 'dmarc') continue;
      if (r.type === 'MX') dns.mx(r.name, r.value);
      else
        dns.txt(
          r.name,
          r.purpose === 'dkim' ? await w.page.evaluate(() => navigator.clipboard.readText()) : r.value,
        );
    }
    await panel.getByRole('button', { name: 'Verify now' }).click();
    await expect
      .poll(() =>
        panel
          .getByRole('heading', { name: `Records for ${name}` })
          .locator('.badge')
          .textContent(),
      )
      .toBe('verified');
    expect(await panel.getByTestId('domain-reason').count()).toBe(0);
    const row = w.page.locator('[data-testid="domains"] tbody tr', { hasText: name });
    await expect.poll(() => row.locator('.badge').textContent()).toBe('verified');
    expect((await api<Domain>(tern, `/domains/${domain.id}`)).status).toBe('verified');
    await checkPage(w, 'domains');
    expect(w.calls).toContain(`POST /domains/${domain.id}/verify`);

    // Delete asks once more; then the domain is gone from the page and the API.
    await row.getByRole('button', { name: `Delete ${name}` }).click();
    await row.getByRole('button', { name: 'Confirm delete' }).click();
    await expect.poll(() => row.count()).toBe(0);
    const res = await fetch(`${tern.url}/domains/${domain.id}`, {
      headers: { authorization: `Bearer ${tern.jwt}` },
    });
    expect(res.status).toBe(404);
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('a member reads the domains and their records, with no add, verify or delete', async () => {
    const name = `news-${process.pid}.example.test`;
    const created = await fetch(`${tern.url}/domains`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tern.jwt}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    expect(created.status).toBe(201);
    const m = await newPage(browser, 360);
    await signIn(m, tern, tern.token('member'), '/domains');
    const row = m.page.locator('[data-testid="domains"] tbody tr', { hasText: name });
    await row.waitFor();
    expect(await m.page.getByLabel('Domain name').count()).toBe(0);
    expect(await m.page.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    await row.getByRole('button', { name: `Records of ${name}` }).click();
    await m.page.getByTestId('domain-records').waitFor();
    expect(await m.page.getByRole('button', { name: 'Verify now' }).count()).toBe(0);
    await checkPage(m, 'domains-member');
    expect(m.calls.filter((c) => /^(POST|DELETE) /.test(c))).toEqual([]);
    expect(m.errors).toEqual([]);
    await m.page.close();
  });
});
