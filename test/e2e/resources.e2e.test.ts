import { signDashboardToken } from '@tern/auth';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../support/services.js';
import { buildTern, startTern } from './tern-process.js';

// SPEC §12, §13, §16 on `npm start` (embedded PGlite, chDB and the Postgres-table log): the tenant
// resources answer, and the projection feeds them (automatic suppressions, per-project logs and
// analytics, template names in top-templates).

const SECRET = 'resources-e2e-secret-long-enough-for-hs256';
const INGEST_TOKEN = 'resources-e2e-ingest-token';
const TENANT = 'acme';

describe('tenant resources on npm start', () => {
  beforeAll(() => buildTern(), 120_000);

  it('templates, suppressions and projects answer and follow the events', async () => {
    const tern = await startTern({
      env: { DATA_DIR: tempDir('tern-e2e-res-'), JWT_SECRET: SECRET, INGEST_TOKEN, NODE_ENV: 'development' },
    });
    try {
      const jwt = signDashboardToken({
        secret: SECRET,
        tenantId: TENANT,
        role: 'admin',
        expiresInSeconds: 600,
      });
      const call = async (
        method: string,
        path: string,
        body?: unknown,
        headers: Record<string, string> = {},
      ) => {
        const res = await fetch(`${tern.url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${jwt}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...headers,
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : undefined };
      };

      const project = await call('POST', '/projects', { name: 'Shop' });
      expect(project.status).toBe(201);
      const projectId = project.body.id as string;
      const template = await call('POST', '/templates', {
        id: 'welcome',
        name: 'Welcome',
        subject: 'Hi {{name}}',
        html: '<p>{{name}}</p>',
      });
      expect(template.status).toBe(201);
      expect(
        (await call('POST', '/templates/welcome/render', { variables: { name: '<Ada>' } })).body,
      ).toEqual({
        subject: 'Hi <Ada>',
        html: '<p>&lt;Ada&gt;</p>',
        text: null,
      });
      expect((await call('POST', '/suppressions', { email: 'Manual@Example.com' })).status).toBe(201);

      // Dated by the wall clock a minute ago: the analytics below ask for two UTC days (yesterday
      // and today), so a run that crosses midnight still counts them.
      const now = Date.now();
      const at = (s: number) => new Date(now - 60_000 + s * 1000).toISOString();
      const event = (id: string, emailId: string, type: string, s: number, data?: object) => ({
        id,
        type,
        tenantId: TENANT,
        emailId,
        occurredAt: at(s),
        ...(data ? { data } : {}),
      });
      const posted = await fetch(`${tern.url}/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          events: [
            event('q1', 'e1', 'email.queued', 0, {
              toEmail: 'a@x.test',
              subject: 's',
              templateId: 'welcome',
              projectId,
            }),
            event('s1', 'e1', 'email.sent', 1, { provider: 'sandbox', messageId: 'm1' }),
            event('q2', 'e2', 'email.queued', 0, { toEmail: 'Bounce@X.test', subject: 's', projectId }),
            event('b2', 'e2', 'email.bounced', 2, { bounceType: 'hard' }),
            event('q3', 'e3', 'email.queued', 0, { toEmail: 'c@x.test', subject: 's' }),
          ],
        }),
      });
      expect(posted.status).toBe(202);

      const suppressions = await waitFor(
        async () => {
          const list = await call('GET', '/suppressions');
          return list.body.meta.total === 2 ? list.body.data : undefined;
        },
        { timeoutMs: 30_000, description: 'the automatic suppression' },
      );
      expect(suppressions.map((s: { email: string; source: string }) => [s.email, s.source]).sort()).toEqual([
        ['bounce@x.test', 'bounce'],
        ['manual@example.com', 'manual'],
      ]);
      const logs = await call('GET', `/emails/logs?projectId=${projectId}`);
      expect(logs.body.data.map((e: { id: string }) => e.id).sort()).toEqual(['e1', 'e2']);
      const summary = await waitFor(
        async () => {
          const s = await call('GET', `/analytics/summary?days=2&projectId=${projectId}`);
          return s.body.totals.total === 2 ? s.body : undefined;
        },
        { timeoutMs: 30_000, description: 'per-project analytics' },
      );
      expect(summary.totals).toMatchObject({ total: 2, sent: 1, bounced: 1 });
      expect((await call('GET', '/analytics/top-templates?days=2')).body.top).toEqual([
        { id: 'welcome', name: 'Welcome', subject: 'Hi {{name}}', sent: 1, opened: 0, clicked: 0 },
      ]);
      expect((await call('DELETE', `/projects/${projectId}`)).status).toBe(409);

      // A key bound to the project sees its emails only.
      const key = await call('POST', `/tenants/${TENANT}/api-keys`, {
        name: 'shop',
        scopes: ['email:read'],
        projectId,
      });
      expect(key.status).toBe(201);
      const byKey = await call('GET', '/emails/logs', undefined, { authorization: `Bearer ${key.body.key}` });
      expect(byKey.body.meta.total).toBe(2);
      expect((await call('GET', '/emails/logs')).body.meta.total).toBe(3);
    } finally {
      expect(await tern.stop()).toBe(0);
    }
  }, 180_000);
});
