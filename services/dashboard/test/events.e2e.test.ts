/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * The Events page (SPEC §25, issue 42), in Chromium against the run's Tern: the tenant's newest
 * events as `GET /events?order=newest` lists them, then events appended through the real ingest
 * route (`POST /events`) appear on top without a reload, read from `GET /events/stream` with the
 * page's JWT; the type filter narrows both the list and the tail.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/services.js';
import { api, checkPage, dashboardFile, postEvents, rowIds } from './fixture.js';

interface StreamPage {
  data: { id: string; cursor: string; type: string }[];
  next: string;
  hasMore: boolean;
}

const email = (tenantId: string, emailId: string, types: string[], at = Date.now()) =>
  types.map((type, i) => ({
    id: `${emailId}-${type}`,
    type,
    tenantId,
    emailId,
    occurredAt: new Date(at + i * 1000).toISOString(),
    data:
      type === 'email.queued'
        ? { toEmail: `${emailId}@example.com`, subject: `About ${emailId}`, tags: ['events'] }
        : type === 'email.sent'
          ? { provider: 'sandbox', messageId: `<${emailId}@tern>` }
          : type === 'email.bounced'
            ? { bounceType: 'hard' }
            : {},
  }));

describe('the Events page, in Chromium', () => {
  const { tern, open } = dashboardFile('events');

  /** Waits until the stream holds `n` events of the tenant (the projector has folded them). */
  const streamed = (n: number) =>
    waitFor(async () => (await api<StreamPage>(tern, '/events?limit=1000')).data.length === n, {
      timeoutMs: 60_000,
      intervalMs: 200,
      description: `${n} events in the stream`,
    });

  it('lists the newest events, then shows appended ones live without a reload; the type filter narrows both', async () => {
    await postEvents(tern, [
      ...email(tern.tenant, 'em-ev1', ['email.queued', 'email.sent', 'email.delivered']),
      ...email(tern.tenant, 'em-ev2', ['email.queued', 'email.sent', 'email.bounced']),
    ]);
    await streamed(6);
    const newest = await api<StreamPage>(tern, '/events?order=newest&limit=50');

    const w = await open('/events');
    const rows = () => rowIds(w.page, 'events');
    await expect.poll(rows).toEqual(newest.data.map((e) => e.id));
    await w.page.getByTestId('live-state').getByText('Live').waitFor();
    await checkPage(w, 'events');
    // A mark on the window: a reload would wipe it.
    await w.page.evaluate(() => {
      (window as unknown as { ternMark: string }).ternMark = 'same page';
    });
    const listCalls = w.calls.filter((c) => c === 'GET /events').length;

    // Appended through the real ingest route: on top, in the stream's order, the page not reloaded.
    await postEvents(tern, email(tern.tenant, 'em-ev3', ['email.queued', 'email.sent']));
    await expect
      .poll(rows, { timeout: 30_000 })
      .toEqual(['em-ev3-email.sent', 'em-ev3-email.queued', ...newest.data.map((e) => e.id)]);
    const top = w.page.locator('[data-testid="events"] tbody tr').first();
    expect(await top.locator('th').textContent()).toBe('email.sent');
    expect(await top.locator('td').nth(1).textContent()).toBe('em-ev3@example.com');
    expect(await w.page.evaluate(() => (window as unknown as { ternMark?: string }).ternMark)).toBe(
      'same page',
    );
    // Delivered by the stream, not by reading the list again.
    expect(w.calls.filter((c) => c === 'GET /events').length).toBe(listCalls);
    expect(w.calls).toContain('GET /events/stream');

    // The filter: only bounces listed, and only bounces tailed.
    await w.page.getByLabel('Type', { exact: true }).selectOption('email.bounced');
    await expect.poll(() => new URL(w.page.url()).hash).toBe('#/events?type=email.bounced');
    await expect.poll(rows).toEqual(['em-ev2-email.bounced']);
    await w.page.getByTestId('live-state').getByText('Live').waitFor();
    await postEvents(tern, email(tern.tenant, 'em-ev3', ['email.delivered']));
    await postEvents(tern, email(tern.tenant, 'em-ev4', ['email.queued', 'email.sent', 'email.bounced']));
    await expect.poll(rows, { timeout: 30_000 }).toEqual(['em-ev4-email.bounced', 'em-ev2-email.bounced']);
    await streamed(12);
    expect(await rows()).toEqual(['em-ev4-email.bounced', 'em-ev2-email.bounced']);
    await checkPage(w, 'events-bounced');
    await w.page.close();
  });
});
