/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * The Inbound page (SPEC §24) in Chromium: swaks delivers a real message (HTML, text and a PDF) to
 * the shared Tern's MX listener (INBOUND_SMTP_PORT); the page lists it with its verdicts, opens it
 * with its HTML in a sandboxed frame (never in the page), and saves its attachment with the same
 * bytes; its routes are made, changed (a refused pattern answered in the form) and deleted there.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../../../test/support/services.js';
import { api, apiWrite, checkPage, dashboardFile, swaksToInbound } from './fixture.js';

interface Listed {
  id: string;
  subject: string | null;
}

/** One MIME message: text and HTML alternatives, and a PDF attached. */
function mime(to: string, subject: string, pdf: Buffer): string {
  return [
    'From: Ann Sender <ann@sender.test>',
    `To: ${to}`,
    `Subject: ${subject}`,
    `Message-ID: <${subject.replace(/\W/g, '')}@sender.test>`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="MIX"',
    '',
    '--MIX',
    'Content-Type: multipart/alternative; boundary="ALT"',
    '',
    '--ALT',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Hello from the text part.',
    '--ALT',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p id="sender-markup">Hello from <b>the HTML part</b>.</p>',
    '--ALT--',
    '--MIX',
    'Content-Type: application/pdf; name="invoice.pdf"',
    'Content-Disposition: attachment; filename="invoice.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    ...(pdf.toString('base64').match(/.{1,76}/g) ?? []),
    '--MIX--',
    '',
  ].join('\r\n');
}

describe('the Inbound page, in Chromium', () => {
  let address: string;

  const { tern, open } = dashboardFile('inbound', {
    seed: async (tern) => {
      const { domain } = await api<{ domain: string }>(tern, '/inbound/domain');
      address = `support@${domain}`;
    },
  });

  it('a message delivered over SMTP is listed with its verdicts, opens sandboxed, and its attachment saves', async () => {
    const pdf = Buffer.concat([
      Buffer.from('%PDF-1.4\n'),
      Buffer.from([0, 9, 200, 255]),
      Buffer.alloc(2048, 3),
    ]);
    const subject = `Invoice question ${Date.now()}`;
    const file = join(tempDir('tern-dashboard-inbound-'), 'message.eml');
    writeFileSync(file, mime(address, subject, pdf));
    const stdout = await swaksToInbound('ann@sender.test', address, ['--data', `@${file}`]);
    const id = /250 [^\n]*(inb_[0-9a-z]+)/.exec(stdout)?.[1];
    expect(id, stdout).toBeDefined();
    // Stored before the 250: the API lists it at once.
    const listed = await waitFor(
      async () => (await api<{ data: Listed[] }>(tern, '/inbound')).data.find((m) => m.id === id),
      { timeoutMs: 10_000, intervalMs: 200, description: 'the message listed' },
    );
    expect(listed.subject).toBe(subject);

    // A route of the tenant (for another address: this message still arrives unrouted).
    await apiWrite(tern, 'POST', '/inbound/routes', {
      match: { recipient: `billing@${address.split('@')[1]}`, subject: '/invoice/' },
      priority: 5,
      actions: [{ store: true }],
    });

    const w = await open('/inbound');
    const route = w.page.locator('[data-testid="inbound-routes"] tbody tr');
    await route.waitFor();
    expect(await route.locator('td, th').allTextContents()).toEqual([
      '5',
      `billing@${address.split('@')[1]}`,
      '—',
      '/invoice/',
      'store',
      'EditDelete',
    ]);
    const row = w.page.locator('[data-testid="inbound"] tbody tr', { hasText: subject });
    await row.waitFor();
    expect(await row.textContent()).toContain('ann@sender.test');
    expect(await row.textContent()).toContain(address);
    expect(await row.locator('.badge').allTextContents()).toEqual([
      expect.stringMatching(/^SPF /),
      expect.stringMatching(/^DKIM /),
      expect.stringMatching(/^DMARC /),
      expect.stringMatching(/^ARC /),
    ]);
    await checkPage(w, 'inbound');

    await row.getByRole('link', { name: subject }).click();
    const fields = w.page.getByTestId('inbound-message');
    await fields.waitFor();
    expect(await fields.textContent()).toContain(id!);
    expect(await w.page.getByTestId('inbound-verdicts').textContent()).toMatch(/SPF .*DKIM .*DMARC .*ARC /);
    // The sender's HTML renders in a frame without scripts or this origin, never in the page itself.
    const iframe = w.page.locator('iframe[title="Received HTML"]');
    expect(await iframe.getAttribute('sandbox')).toBe('');
    const frame = w.page.frameLocator('iframe[title="Received HTML"]');
    await expect.poll(() => frame.locator('b').textContent()).toBe('the HTML part');
    expect(await w.page.locator('#sender-markup').count()).toBe(0);

    const link = w.page.getByTestId('inbound-attachments').getByRole('link', { name: 'invoice.pdf' });
    expect(await w.page.getByTestId('inbound-attachments').textContent()).toContain('application/pdf');
    const [saved] = await Promise.all([w.page.waitForEvent('download'), link.click()]);
    expect(saved.suggestedFilename()).toBe('invoice.pdf');
    // The browser is the run's shared one (connected remotely): read the file through Playwright.
    const chunks: Buffer[] = [];
    for await (const chunk of await saved.createReadStream()) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(pdf)).toBe(true);
    expect(w.calls).toContain(`GET /inbound/${id}/attachments/att_0`);
    await checkPage(w, 'inbound-message');
  }, 120_000);

  it('routes: created, edited (a bad pattern refused in the form) and deleted from the page', async () => {
    const domain = address.split('@')[1]!;
    const recipient = `orders-${Date.now()}@${domain}`;
    const routes = async () =>
      (
        await api<{
          data: { id: string; priority: number; match: Record<string, string>; actions: unknown[] }[];
        }>(tern, '/inbound/routes')
      ).data.filter((r) => r.match.recipient === recipient);

    const w = await open('/inbound');
    await w.page.getByRole('button', { name: 'New route' }).click();
    const form = w.page.getByRole('form', { name: 'New route' });
    await form.getByLabel('Recipient pattern').fill(recipient);
    await form.getByLabel('Subject pattern (optional)').fill('/order/');
    await form.getByLabel('Priority').fill('3');
    await form.getByLabel('Action 1', { exact: true }).selectOption('forward');
    await form.getByLabel('Forward to (action 1)').fill('ops@elsewhere.test');
    await form.getByRole('button', { name: 'Add action' }).click();
    await form.getByLabel('Action 2', { exact: true }).selectOption('store');
    await checkPage(w, 'inbound-route-form');
    await form.getByRole('button', { name: 'Create route' }).click();
    await form.waitFor({ state: 'detached' });
    const [made] = await routes();
    expect(made).toMatchObject({
      priority: 3,
      match: { recipient, subject: '/order/' },
      actions: [{ forward: 'ops@elsewhere.test' }, { store: true }],
    });
    expect(w.calls).toContain('POST /inbound/routes');
    const row = w.page.locator('[data-testid="inbound-routes"] tbody tr', { hasText: recipient });
    expect(await row.locator('td').nth(3).textContent()).toBe('forward ops@elsewhere.test, store');

    // Edit: a pattern that is no regex is refused by the API, said in the form, and nothing changes.
    await w.page.getByRole('button', { name: `Edit route ${recipient}` }).click();
    const edit = w.page.getByRole('form', { name: 'Edit route' });
    expect(await edit.getByLabel('Recipient pattern').inputValue()).toBe(recipient);
    expect(await edit.getByLabel('Forward to (action 1)').inputValue()).toBe('ops@elsewhere.test');
    await edit.getByLabel('From pattern (optional)').fill('/(unclosed/');
    await edit.getByRole('button', { name: 'Save route' }).click();
    await expect.poll(() => edit.getByRole('alert').textContent()).toMatch(/regex/);
    expect((await routes())[0]).toEqual(made);
    // The browser logs the refused request: the one error expected, then the page must stay clean.
    expect(w.errors).toEqual([expect.stringMatching(/status of 400/)]);
    w.errors.length = 0;
    await edit.getByLabel('From pattern (optional)').fill('*@customer.test');
    await edit.getByLabel('Priority').fill('7');
    await edit.getByLabel('Action 1', { exact: true }).selectOption('drop');
    await edit.getByRole('button', { name: 'Remove action 2' }).click();
    await edit.getByRole('button', { name: 'Save route' }).click();
    await edit.waitFor({ state: 'detached' });
    expect(await routes()).toEqual([
      expect.objectContaining({
        id: made!.id,
        priority: 7,
        match: { recipient, from: '*@customer.test', subject: '/order/' },
        actions: [{ drop: true }],
      }),
    ]);
    expect(w.calls).toContain(`PUT /inbound/routes/${made!.id}`);
    await expect.poll(() => row.locator('td').first().textContent()).toBe('7');

    // Delete, confirmed.
    await w.page.getByRole('button', { name: `Delete route ${recipient}` }).click();
    await row.getByRole('button', { name: 'Confirm delete' }).click();
    await row.waitFor({ state: 'detached' });
    expect(await routes()).toEqual([]);
    expect(w.calls).toContain(`DELETE /inbound/routes/${made!.id}`);
    await checkPage(w, 'inbound-routes-after-delete');
  }, 120_000);
});
