// Contacts and unsubscribe in the all-in-one process on its embedded stores (PGlite, chDB, the
// Postgres-table log): the CSV import streams into PGlite, and the unsubscribe links signed with
// the generated development TRACKING_SECRET keep working across a restart.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { signDashboardToken } from '@tern/auth';
import { listUnsubscribeHeaders } from '@tern/domain';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/services.js';
import { buildTern, startTern } from './tern-process.js';

const TENANT = 'demo';
const ROWS = 5000;

interface DevSecrets {
  jwtSecret: string;
  trackingSecret: string;
}

describe('contacts and unsubscribe in the all-in-one process', () => {
  beforeAll(() => buildTern(), 120_000);

  it('imports, exports, and honours an unsubscribe link after a restart (generated TRACKING_SECRET)', async () => {
    const dataDir = tempDir('tern-e2e-contacts-');
    let tern = await startTern({ env: { DATA_DIR: dataDir, NODE_ENV: 'development' } });
    try {
      const secrets = JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8')) as DevSecrets;
      expect(secrets.trackingSecret.length).toBeGreaterThanOrEqual(32);
      const jwt = signDashboardToken({
        secret: secrets.jwtSecret,
        tenantId: TENANT,
        role: 'owner',
        expiresInSeconds: 600,
      });
      const auth = { authorization: `Bearer ${jwt}` };

      const csv = `email,first_name,audiences\n${Array.from({ length: ROWS }, (_, i) => `u${i}@example.com,U${i},spring`).join('\n')}\n`;
      const imported = await fetch(`${tern.url}/contacts/import`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'text/csv' },
        body: csv,
      });
      expect(imported.status).toBe(200);
      expect(await imported.json()).toEqual({ rows: ROWS, created: ROWS, updated: 0, failed: 0, errors: [] });

      const exported = await fetch(`${tern.url}/contacts/export?audience=spring`, { headers: auth });
      expect(exported.status).toBe(200);
      expect((await exported.text()).trimEnd().split('\n')).toHaveLength(ROWS + 1);

      const headers = listUnsubscribeHeaders({
        tenantId: TENANT,
        email: 'u7@example.com',
        source: 'campaign:cmp_e2e',
        secret: secrets.trackingSecret,
        publicUrl: tern.url,
      });
      const link = /^<([^>]+)>/.exec(headers['List-Unsubscribe'])?.[1];
      expect(link?.startsWith(`${tern.url}/u/`)).toBe(true);

      // The secret is kept: a link built before a restart works after it.
      expect(await tern.stop()).toBe(0);
      tern = await startTern({ env: { DATA_DIR: dataDir, NODE_ENV: 'development' } });
      const relink = link!.replace(/^http:\/\/127\.0\.0\.1:\d+/, tern.url);
      const page = await fetch(relink);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('u7@example.com');
      const click = await fetch(relink, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: headers['List-Unsubscribe-Post'],
      });
      expect(click.status).toBe(200);

      const list = await fetch(`${tern.url}/contacts?audience=spring&limit=100&page=1`, { headers: auth });
      const body = (await list.json()) as { meta: { total: number } };
      expect(body.meta.total).toBe(ROWS);
      const all = await (await fetch(`${tern.url}/contacts/export`, { headers: auth })).text();
      const u7 = all.split('\n').find((l) => l.includes(',u7@example.com,'));
      expect(u7).toMatch(/,u7@example\.com,U7,,false,spring,/);
      expect(all.split('\n').filter((l) => l.includes(',false,'))).toHaveLength(1);
      expect((await fetch(`${relink.slice(0, -3)}abc`, { method: 'POST' })).status).toBe(404);
    } finally {
      await tern.stop();
    }
  }, 180_000);
});
