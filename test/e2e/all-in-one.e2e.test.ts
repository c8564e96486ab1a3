import { execFileSync, execSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../support/services.js';
import { buildTern, runTernToExit, SEED_DEMO, startTern } from './tern-process.js';

const TENANT = 'demo';

/** The banner line matching `pattern`, or the one `offset` lines below it. */
function bannerLine(stdout: string, pattern: RegExp, offset = 0): string {
  const lines = stdout.split('\n');
  const i = lines.findIndex((l) => pattern.test(l));
  expect(i, `banner line ${pattern} in:\n${stdout}`).toBeGreaterThanOrEqual(0);
  return lines[i + offset]!.trim();
}

const events = (n: number, from = 0) =>
  Array.from({ length: n }, (_, k) => {
    const i = from + k;
    return [
      {
        id: `q-${i}`,
        type: 'email.queued',
        tenantId: TENANT,
        emailId: `e2e-${i}`,
        occurredAt: new Date(Date.now() - i * 60_000).toISOString(),
        data: { toEmail: `u${i}@example.com`, subject: `Hi ${i}`, templateId: 'welcome', tags: ['e2e'] },
      },
      {
        id: `s-${i}`,
        type: 'email.sent',
        tenantId: TENANT,
        emailId: `e2e-${i}`,
        occurredAt: new Date(Date.now() - i * 60_000 + 1000).toISOString(),
        data: { provider: 'ses', messageId: `m-${i}` },
      },
    ];
  }).flat();

describe('npm start: ingest, projector and api in one process on embedded stores', () => {
  beforeAll(() => buildTern(), 120_000);

  it('answers on one port, its banner commands work as printed, and data survives a restart', async () => {
    const dataDir = tempDir('tern-e2e-aio-');
    const tern = await startTern({ env: { DATA_DIR: dataDir, NODE_ENV: 'development' } });
    let restarted: Awaited<ReturnType<typeof startTern>> | undefined;
    try {
      // The banner: URL, a dashboard JWT, the ingest token and its curl commands.
      const stdout = tern.stdout();
      expect(stdout).toContain(`Tern is running at ${tern.url}`);
      const jwt = bannerLine(stdout, /Dashboard JWT/, 1);
      expect(jwt.split('.')).toHaveLength(3);
      const token = bannerLine(stdout, /Ingest token:/)
        .split(':')[1]!
        .trim();
      const curls = stdout
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l.startsWith('curl '));
      expect(curls).toHaveLength(4);
      expect(JSON.parse(execSync(curls[0]!, { shell: '/bin/bash' }).toString())).toEqual({
        accepted: 1,
        position: expect.any(String),
      });

      // More events through the public endpoint.
      const post = await fetch(`${tern.url}/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events: events(20) }),
      });
      expect(post.status).toBe(202);

      // Projected: 21 log entries, read back with the dashboard JWT.
      const auth = { authorization: `Bearer ${jwt}` };
      const logs = await waitFor(
        async () => {
          const res = await fetch(`${tern.url}/emails/logs?limit=100`, { headers: auth });
          const body = (await res.json()) as {
            meta: { total: number };
            data: { id: string; status: string }[];
          };
          return body.meta.total === 21 && body.data.filter((d) => d.status === 'SENT').length === 20
            ? body
            : undefined;
        },
        { timeoutMs: 30_000, description: '21 log entries' },
      );
      expect(logs.data.map((d) => d.id)).toContain('email-demo-1');

      // The banner's analytics command, as printed. ClickHouse follows the log a moment later (the
      // projector ships its batch after the commit that made the entries visible).
      const summary = await waitFor(
        () => {
          const answer = JSON.parse(execSync(curls[2]!, { shell: '/bin/bash' }).toString());
          return answer.totals?.total === 21 ? answer : undefined;
        },
        { timeoutMs: 30_000, description: 'the summary counting 21' },
      );
      expect(summary.totals).toMatchObject({ total: 21, sent: 20 });
      expect(summary.period.days).toBe(30);

      // The banner's domain command, as printed (SPEC §20): a pending domain and its four records.
      const domain = JSON.parse(execSync(curls[3]!, { shell: '/bin/bash' }).toString());
      expect(domain).toMatchObject({ name: 'example.com', status: 'pending' });
      expect(domain.records.map((r: { purpose: string }) => r.purpose)).toEqual([
        'dkim',
        'return_path_mx',
        'return_path_spf',
        'dmarc',
      ]);

      // An API key reads the same log.
      const created = await fetch(`${tern.url}/tenants/${TENANT}/api-keys`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'e2e', scopes: ['email:read'] }),
      });
      expect(created.status).toBe(201);
      const { key } = (await created.json()) as { key: string };
      const byKey = await fetch(`${tern.url}/emails/logs?page=2&limit=10`, { headers: { 'x-api-key': key } });
      expect(byKey.status).toBe(200);
      expect(((await byKey.json()) as { meta: unknown }).meta).toEqual({
        page: 2,
        limit: 10,
        total: 21,
        totalPages: 3,
        nextCursor: expect.any(String),
      });

      // Operations: metrics and readiness.
      const metrics = await (await fetch(`${tern.url}/metrics`)).text();
      expect(metrics).toMatch(/ingest_events_accepted_total 41/);
      expect(metrics).toContain('projector_batch_duration_ms_bucket');
      expect(metrics).toContain('http_request_duration_seconds_bucket');
      expect((await fetch(`${tern.url}/ready`)).status).toBe(200);

      // Graceful stop, then a restart on the same DATA_DIR finds everything.
      expect(await tern.stop()).toBe(0);
      restarted = await startTern({ env: { DATA_DIR: dataDir, NODE_ENV: 'development' } });
      const again = await fetch(`${restarted.url}/emails/logs?limit=100`, { headers: auth });
      expect(again.status).toBe(200);
      expect(((await again.json()) as { meta: { total: number } }).meta.total).toBe(21);
      const keyAgain = await fetch(`${restarted.url}/emails/logs`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(keyAgain.status).toBe(200);

      // seed:demo posts a 90-day stream through the public endpoint; the daily series shows it.
      const seeded = execFileSync(process.execPath, [SEED_DEMO], {
        env: {
          PATH: process.env.PATH ?? '',
          DATA_DIR: dataDir,
          TERN_URL: restarted.url,
          SEED_EMAILS: '300',
          SEED_SENDS: '30',
        },
      }).toString();
      expect(seeded).toMatch(/^seeded 300 emails \(\d+ events\) for tenant "demo"/);
      expect(seeded).toMatch(/sent 30 emails through POST \/emails\/batch/);
      const restartedUrl = restarted.url;
      const daily = await waitFor(
        async () => {
          const res = await fetch(`${restartedUrl}/analytics/daily?days=90`, { headers: auth });
          const body = (await res.json()) as { daily: { sent: number }[] };
          const sent = body.daily.reduce((n, d) => n + d.sent, 0);
          return sent >= 20 + 250 ? body : undefined;
        },
        { timeoutMs: 30_000, description: 'seeded emails in the daily series' },
      );
      expect(daily.daily).toHaveLength(90);
      expect(daily.daily.filter((d) => d.sent > 0).length).toBeGreaterThan(60);
      expect(await restarted.stop()).toBe(0);
    } finally {
      await tern.stop();
      await restarted?.stop();
    }
  }, 180_000);

  it('in production, a missing secret is a one-line start-up error naming the variable', async () => {
    const { code, stderr } = await runTernToExit({
      DATA_DIR: tempDir('tern-e2e-prod-'),
      NODE_ENV: 'production',
    });
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/INGEST_TOKEN|JWT_SECRET/);
  });

  /** What a production start requires; each case below leaves one out. */
  const PROD_SECRETS = {
    JWT_SECRET: 'prod-e2e-jwt-secret-0123456789abcdef',
    INGEST_TOKEN: 'prod-e2e-ingest-token-0123456789abcdef',
    TRACKING_SECRET: 'prod-e2e-tracking-secret-0123456789',
    WEBHOOK_SECRETS_KEY: 'prod-e2e-webhook-secrets-key-0123456789',
    ENCRYPTION_KEY: 'prod-e2e-encryption-key-0123456789abcdef',
  };
  for (const [missing, title] of [
    [
      'WEBHOOK_SECRETS_KEY',
      'in production, webhooks are never silently off: no WEBHOOK_SECRETS_KEY is a one-line start-up error',
    ],
    [
      'ENCRYPTION_KEY',
      'in production, personal fields are never sealed with a generated key: no ENCRYPTION_KEY is a one-line start-up error',
    ],
  ] as const)
    it(title, async () => {
      const { [missing]: _left, ...secrets } = PROD_SECRETS;
      const { code, stderr } = await runTernToExit({
        DATA_DIR: tempDir('tern-e2e-prod-'),
        NODE_ENV: 'production',
        ...secrets,
      });
      expect(code).toBe(1);
      expect(stderr.trim().split('\n')).toEqual([
        `Invalid configuration: ${missing} must be set in production (dev values are generated only outside production)`,
      ]);
    });

  it('bad configuration fails at start with one line naming the variable', async () => {
    const { code, stderr } = await runTernToExit({ DATA_DIR: tempDir('tern-e2e-bad-'), PORT: 'abc' });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([expect.stringContaining('PORT')]);
  });
});
