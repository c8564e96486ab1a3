import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gzip, gzipBomb, reportXml } from '../../packages/inbound/test/dmarc-report.js';
import { sendMailTo } from '../support/bounce-mail.js';
import { createFreshDatabase, tempDir } from '../support/services.js';
import { buildTern, freePort, ownerJwt, startTern, type TernProcess } from './tern-process.js';

/**
 * SPEC §26's DMARC aggregate reports on the built process (`npm start` with INBOUND_SMTP_PORT,
 * Postgres, the Postgres-table log): a gzipped report mailed over SMTP to the tenant's address
 * under INBOUND_DOMAIN is served by `GET /domains/:id/dmarc` by source IP; a gzip bomb mailed in is
 * received as mail but recorded rejected, nothing of it stored; a key without `analytics:read` → 403.
 */
const JWT_SECRET = 'dmarc-e2e-secret-0123456789abcdef';
const TENANT = 'acme';
const INBOUND_DOMAIN = 'in.tern.test';
const DOMAIN = 'reports.example.com';

let db: { url: string; drop(): Promise<void> };
let pool: pg.Pool;
let tern: TernProcess | undefined;
let inboundPort: number;
let domainId: string;
const keys: Record<string, string> = {};
const jwt = ownerJwt(JWT_SECRET, TENANT);
const call = async (method: string, path: string, body?: unknown, token = jwt) =>
  fetch(`${tern!.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

async function mail(subject: string, filename: string, content: Buffer): Promise<string> {
  const info = await sendMailTo(inboundPort, {
    from: 'noreply-dmarc-support@google.com',
    to: `dmarc@${TENANT}.${INBOUND_DOMAIN}`,
    subject,
    text: 'This is an aggregate report.',
    attachments: [{ filename, content, contentType: 'application/gzip' }],
  });
  return info.response;
}

type Summary = {
  reports: number;
  rejected: number;
  messages: number;
  sources: { sourceIp: string; count: number; dkim: { pass: number; fail: number }; reporters: string[] }[];
};

beforeAll(async () => {
  buildTern();
  db = await createFreshDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  inboundPort = await freePort();
  tern = await startTern({
    env: {
      NODE_ENV: 'development',
      DATABASE_URL: db.url,
      JWT_SECRET,
      INGEST_TOKEN: 'dmarc-e2e-ingest-token-0123456789',
      TRACKING_SECRET: 'dmarc-e2e-tracking-secret-0123456789',
      WEBHOOK_SECRETS_KEY: 'dmarc-e2e-webhook-secrets-key-0123456789',
      ENCRYPTION_KEY: 'dmarc-e2e-encryption-key-0123456789abcdef',
      INBOUND_SMTP_PORT: String(inboundPort),
      INBOUND_DOMAIN,
      DATA_DIR: tempDir('tern-e2e-dmarc-'),
    },
    readyTimeoutMs: 180_000,
  });
  // The tenant's address under INBOUND_DOMAIN is issued by this call.
  expect((await call('GET', '/inbound/domain')).status).toBe(200);
  const created = await call('POST', '/domains', { name: DOMAIN });
  expect(created.status).toBe(201);
  domainId = ((await created.json()) as { id: string }).id;
  for (const [name, scopes] of [
    ['analytics', ['analytics:read']],
    ['send', ['email:send']],
  ] as const) {
    const res = await call('POST', `/tenants/${TENANT}/api-keys`, { name: `dmarc ${name}`, scopes });
    expect(res.status).toBe(201);
    keys[name] = ((await res.json()) as { key: string }).key;
  }
}, 240_000);

afterAll(async () => {
  await tern?.stop();
  await pool?.end();
  await db?.drop();
});

describe('DMARC aggregate reports through the MX listener', () => {
  it('a gzipped report mailed in is answered by GET /domains/:id/dmarc, by source IP', async () => {
    const xml = reportXml({
      domain: DOMAIN,
      org: 'Yahoo',
      reportId: 'y-1',
      rows: [
        { ip: '203.0.113.5', count: 120 },
        { ip: '198.51.100.9', count: 3, disposition: 'reject', dkim: 'fail', spf: 'fail' },
      ],
    });
    const response = await mail(
      `Report Domain: ${DOMAIN} Submitter: yahoo.com`,
      `yahoo.com!${DOMAIN}!1700000000!1700086399.xml.gz`,
      gzip(xml),
    );
    expect(response).toMatch(/^250 /);
    // Parsed before the 250: served at once.
    const res = await call('GET', `/domains/${domainId}/dmarc?days=7`, undefined, keys.analytics);
    expect(res.status).toBe(200);
    const summary = (await res.json()) as Summary;
    expect(summary).toMatchObject({ reports: 1, rejected: 0, messages: 123 });
    expect(summary.sources.map((s) => [s.sourceIp, s.count, s.dkim, s.reporters])).toEqual([
      ['203.0.113.5', 120, { pass: 120, fail: 0 }, ['Yahoo']],
      ['198.51.100.9', 3, { pass: 0, fail: 3 }, ['Yahoo']],
    ]);
  });

  it('a gzip bomb mailed in is received as mail, recorded rejected and nothing of it is stored', async () => {
    const records = async () =>
      (await pool.query('SELECT count(*)::int AS n FROM dmarc_records')).rows[0].n as number;
    const before = await records();
    expect(await mail(`Report Domain: ${DOMAIN}`, `evil!${DOMAIN}!1!2.xml.gz`, await gzipBomb(64))).toMatch(
      /^250 /,
    );
    const rejected = await pool.query<{ reason: string }>(
      "SELECT reason FROM dmarc_reports WHERE status = 'rejected'",
    );
    expect(rejected.rows.map((r) => r.reason)).toEqual([
      expect.stringMatching(/^compression ratio over 200:1/),
    ]);
    expect(await records()).toBe(before);
    const body = (await (await call('GET', `/domains/${domainId}/dmarc`)).json()) as Summary;
    expect(body).toMatchObject({ reports: 1, rejected: 1, messages: 123 });
  });

  it('a key without analytics:read → 403; days out of range → 400; another id → 404', async () => {
    const denied = await call('GET', `/domains/${domainId}/dmarc`, undefined, keys.send);
    expect(denied.status).toBe(403);
    expect((await call('GET', `/domains/${domainId}/dmarc?days=0`)).status).toBe(400);
    expect((await call('GET', '/domains/dom_8Kd2mQ7wE1rT6yU3iO9pAs4L/dmarc')).status).toBe(404);
  });
});
