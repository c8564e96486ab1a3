/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * The contacts page's CSV import and export (SPEC §14, issue 30) in Chromium against the run's
 * Tern: a 10 000-line file uploaded with a progress bar that moves (the upload is throttled to a
 * slow link through the DevTools protocol, as a real one would be), the import's counts and
 * refused lines with their reasons as the API answered them, then the export downloaded and equal
 * to the API's.
 */
import { describe, expect, it } from 'vitest';
import { api, apiWrite, checkPage, dashboardFile } from './fixture.js';

const LINES = 10_000;
/** Data rows (1-based) that are refused, and why. */
const BAD: Record<number, string> = {
  4001: 'not-an-address,Bad,Row,true,imported',
  7002: 'row7002@example.com,Bad,Row,maybe,imported',
  9003: 'row9003@example.com,Bad,Row,true,"{""not"":""names""}"',
};
/** Contacts that exist before the import: their rows update them. */
const EXISTING = 5;

function csv(): string {
  const rows = ['email,first_name,last_name,subscribed,audiences'];
  for (let i = 1; i <= LINES; i++)
    rows.push(BAD[i] ?? `row${i}@example.com,First${i},Last${i},true,imported`);
  return `${rows.join('\n')}\n`;
}

describe('contacts: CSV import with progress, and export, in Chromium', () => {
  const { tern, browser, open } = dashboardFile('imports');

  it('imports 10 000 lines: the bar moves, the counts and refused lines are the API’s; the export downloads', async () => {
    const w = await open('/contacts');
    await w.page.getByTestId('empty').getByText('No contact yet.').waitFor();
    for (let i = 1; i <= EXISTING; i++) {
      await apiWrite(tern, 'POST', '/contacts', { email: `row${i}@example.com`, firstName: 'Old' });
    }
    await w.page.reload();
    await w.page.locator('[data-testid="contacts"] tbody tr').first().waitFor();

    // A slow uplink (256 kB/s): the file takes seconds to send, and the bar is seen to move.
    const file = Buffer.from(csv());
    expect(file.length).toBeGreaterThan(400_000);
    const cdp = await browser.context.newCDPSession(w.page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: 256 * 1024,
    });
    // Every value the bar takes, recorded in the page as it changes.
    await w.page.evaluate(() => {
      const seen: number[] = [];
      (window as unknown as { progressSeen: number[] }).progressSeen = seen;
      new MutationObserver(() => {
        const bar = document.querySelector<HTMLProgressElement>('progress#import-progress');
        if (bar && seen.at(-1) !== bar.value) seen.push(bar.value);
      }).observe(document.body, { subtree: true, childList: true, attributes: true });
    });
    await w.page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: file });
    await w.page.getByLabel('Add every imported contact to the audience (optional)').fill('spring');
    const started = Date.now();
    await w.page.getByRole('button', { name: 'Import' }).click();
    await w.page.getByTestId('import-result').waitFor({ timeout: 90_000 });
    const took = Date.now() - started;
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    const seen = await w.page.evaluate(() => (window as unknown as { progressSeen: number[] }).progressSeen);
    const between = seen.filter((v) => v > 0 && v < file.length);
    expect(between.length, `bar values ${seen.join(', ')} over ${took} ms`).toBeGreaterThanOrEqual(2);
    expect([...between].sort((a, b) => a - b)).toEqual(between);
    expect(await w.page.locator('progress#import-progress').getAttribute('value')).toBe(String(file.length));

    // The counts: what the API created, updated and refused.
    const figure = async (k: string) =>
      (await w.page.getByTestId(`import-${k}`).textContent())?.replace(/,/g, '');
    expect(await figure('rows')).toBe(String(LINES));
    expect(await figure('created')).toBe(String(LINES - EXISTING - 3));
    expect(await figure('updated')).toBe(String(EXISTING));
    expect(await figure('failed')).toBe('3');
    const contacts = await api<{ meta: { total: number } }>(tern, '/contacts?limit=1');
    expect(contacts.meta.total).toBe(LINES - 3);
    const spring = await api<{ data: { name: string; contacts: number }[] }>(tern, '/audiences?name=spring');
    expect(spring.data[0]?.contacts).toBe(LINES - 3);
    // Refused lines by row (the header is row 1), with the API's reasons.
    const refused = await w.page
      .locator('[data-testid="import-errors"] tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [tr.querySelector('th')?.textContent, tr.querySelector('td')?.textContent]),
      );
    expect(refused.map(([row]) => row)).toEqual(['4002', '7003', '9004']);
    expect(refused[0]![1]).toMatch(/email/);
    expect(refused[1]![1]).toMatch(/subscribed/);
    expect(refused[2]![1]).toMatch(/audience/);
    await checkPage(w, 'contacts-import');

    // Export: the browser saves the API's CSV.
    const download = w.page.waitForEvent('download');
    await w.page.getByRole('button', { name: 'Export CSV' }).click();
    const saved = await download;
    expect(saved.suggestedFilename()).toBe('contacts.csv');
    // The browser is the run's shared one (connected remotely): read the file through Playwright.
    const chunks: Buffer[] = [];
    for await (const chunk of await saved.createReadStream()) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const fromApi = await (
      await fetch(`${tern.url}/contacts/export`, { headers: { authorization: `Bearer ${tern.jwt}` } })
    ).text();
    expect(body).toBe(fromApi);
    expect(body.trimEnd().split('\n')).toHaveLength(LINES - 3 + 1);
    await w.page.getByTestId('exported').waitFor();
    expect(w.errors).toEqual([]);
    await w.page.close();
  });
});
