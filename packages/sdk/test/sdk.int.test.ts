// The SDK against the real query service: `createApiApp` from @tern/api on a real Postgres
// database (fresh for this file) and embedded chDB, listening on a loopback port. Log entries are
// folded from delivery events by the projector's own Postgres sink, and API keys are minted
// through `POST /tenants/:id/api-keys` with a dashboard JWT, as a user would.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApiApp } from '@tern/api';
import { createJwtVerifier, signDashboardToken } from '@tern/auth';
import type { DeliveryEvent, Scope } from '@tern/contracts';
import { applyBatchToPostgres } from '@tern/projector';
import { type ClickHouseStore, createClickHouse, migrateClickHouse, migratePostgres } from '@tern/stores';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmailLogEntry, init, type LogsResponse, TernApiError, TernTimeoutError } from '../src/index.js';

const JWT_SECRET = `sdk-int-${randomBytes(16).toString('hex')}`;
const ADMIN_URL =
  process.env.TERN_TEST_ADMIN_DATABASE_URL ??
  process.env.DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres';
const TENANT = `sdk-${randomBytes(4).toString('hex')}`;
const OTHER_TENANT = `${TENANT}-other`;
const EMAILS = 45;
// Retries in these tests wait a few ms, not the default half second.
const fast = { retryBaseDelayMs: 5, maxRetryDelayMs: 2_000 } as const;

let dbName: string;
let pool: pg.Pool;
let ch: ClickHouseStore;
let dataDir: string;
let api: FastifyInstance;
let apiUrl: string;
let proxy: ReturnType<typeof createFaultProxy>;
let proxyUrl: string;
let readKey: string;
let expected: EmailLogEntry[];
let batch = 0;
const newBatchId = () => `sdk-int-${++batch}-${randomBytes(4).toString('hex')}`;

// ── fixtures ──────────────────────────────────────────────────────────────────────────────────

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Events of one email: queued `minutesAgo` before now, optionally sent. */
function emailEvents(tenantId: string, n: number, minutesAgo: number, sent: boolean): DeliveryEvent[] {
  const emailId = `email-${String(n).padStart(3, '0')}`;
  const queuedAt = new Date(Date.now() - minutesAgo * 60_000).toISOString();
  const events: DeliveryEvent[] = [
    {
      id: `${emailId}-q`,
      type: 'email.queued',
      tenantId,
      emailId,
      occurredAt: queuedAt,
      data: {
        toEmail: `user${n}@example.com`,
        subject: `Subject ${n}`,
        tags: n % 3 === 0 ? ['welcome'] : [],
      },
    },
  ];
  if (sent) {
    events.push({
      id: `${emailId}-s`,
      type: 'email.sent',
      tenantId,
      emailId,
      occurredAt: new Date(Date.parse(queuedAt) + 1000).toISOString(),
      data: { provider: 'ses', messageId: `msg-${n}` },
    });
  }
  return events;
}

function entryOf(n: number, sent: boolean, createdAt: string): EmailLogEntry {
  return {
    id: `email-${String(n).padStart(3, '0')}`,
    toEmail: `user${n}@example.com`,
    subject: `Subject ${n}`,
    status: sent ? 'SENT' : 'QUEUED',
    provider: sent ? 'ses' : null,
    messageId: sent ? `msg-${n}` : null,
    createdAt,
    tags: n % 3 === 0 ? ['welcome'] : [],
    opened: false,
    clicked: false,
    complained: false,
  };
}

async function createKey(scopes: Scope[]): Promise<{ id: string; key: string }> {
  const token = signDashboardToken({
    secret: JWT_SECRET,
    tenantId: TENANT,
    role: 'owner',
    expiresInSeconds: 600,
  });
  const res = await fetch(`${apiUrl}/tenants/${TENANT}/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `sdk ${scopes.join(' ')}`, scopes }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; key: string };
}

async function revokeKey(id: string): Promise<void> {
  const token = signDashboardToken({
    secret: JWT_SECRET,
    tenantId: TENANT,
    role: 'owner',
    expiresInSeconds: 600,
  });
  const res = await fetch(`${apiUrl}/tenants/${TENANT}/api-keys/${id}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(204);
}

type Fault = { status: number; headers?: Record<string, string> } | 'hang';

/**
 * A pass-through HTTP proxy in front of the real API that answers the next requests with the
 * queued faults (a 429 with Retry-After, a 503, a stall) before forwarding again; it counts every
 * request it sees, so tests can tell how many attempts the SDK made.
 */
function createFaultProxy(target: string) {
  const faults: Fault[] = [];
  const seen: { url: string; at: number }[] = [];
  const hanging: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push({ url: req.url ?? '', at: Date.now() });
    const fault = faults.shift();
    if (fault === 'hang') {
      hanging.push(res);
      return;
    }
    if (fault) {
      const body = JSON.stringify({
        statusCode: fault.status,
        error: 'Injected',
        message: `injected ${fault.status}`,
      });
      res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
      res.end(body);
      return;
    }
    const headers: Record<string, string> = {};
    if (req.headers.authorization) headers.authorization = req.headers.authorization;
    fetch(`${target}${req.url ?? '/'}`, { headers })
      .then(async (upstream) => {
        const text = await upstream.text();
        const out: Record<string, string> = {
          'content-type': upstream.headers.get('content-type') ?? 'text/plain',
        };
        const retryAfter = upstream.headers.get('retry-after');
        if (retryAfter) out['retry-after'] = retryAfter;
        res.writeHead(upstream.status, out);
        res.end(text);
      })
      .catch(() => {
        res.writeHead(502);
        res.end();
      });
  });
  return {
    faults,
    seen,
    async start(): Promise<string> {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    reset() {
      faults.length = 0;
      seen.length = 0;
    },
    async stop(): Promise<void> {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ── lifecycle ─────────────────────────────────────────────────────────────────────────────────

beforeAll(async () => {
  dbName =
    `${process.env.TERN_TEST_RUN_ID ?? 'tern_test_sdk'}_sdk_${randomBytes(3).toString('hex')}`.toLowerCase();
  await adminQuery(`CREATE DATABASE "${dbName}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  pool = new pg.Pool({ connectionString: url.toString(), max: 4 });
  // The run's teardown drops databases WITH (FORCE): an idle client it kills is no test failure.
  pool.on('error', () => undefined);
  await migratePostgres(pool);
  dataDir = mkdtempSync(join(tmpdir(), 'tern-sdk-int-'));
  ch = createClickHouse({ dataDir });
  await migrateClickHouse(ch.client);

  // 45 emails a minute apart, every other one sent; plus another tenant's, which must never show.
  const events: DeliveryEvent[] = [];
  const minutesAgo = (n: number) => 10 + n;
  for (let n = 1; n <= EMAILS; n++) events.push(...emailEvents(TENANT, n, minutesAgo(n), n % 2 === 0));
  for (let n = 1; n <= 5; n++) events.push(...emailEvents(OTHER_TENANT, n, minutesAgo(n), false));
  await applyBatchToPostgres(pool, events, [], newBatchId);
  const createdAt = new Map(
    events
      .filter((e) => e.type === 'email.queued' && e.tenantId === TENANT)
      .map((e) => [e.emailId, e.occurredAt]),
  );
  // Newest first: email-001 is the most recent.
  expected = Array.from({ length: EMAILS }, (_, i) => {
    const n = i + 1;
    const id = `email-${String(n).padStart(3, '0')}`;
    return entryOf(n, n % 2 === 0, new Date(createdAt.get(id)!).toISOString());
  });

  const app = await createApiApp({
    data: { pool, ch: ch.client },
    jwt: createJwtVerifier({ secret: JWT_SECRET }),
    policy: { retentionDays: 90, now: () => new Date() },
  });
  api = app;
  apiUrl = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  proxy = createFaultProxy(apiUrl);
  proxyUrl = await proxy.start();
  readKey = (await createKey(['email:read'])).key;
}, 120_000);

afterAll(async () => {
  await proxy?.stop();
  await api?.close();
  await pool?.end();
  await ch?.close();
  if (dbName) await adminQuery(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

// ── tests ─────────────────────────────────────────────────────────────────────────────────────

describe('getLogs against the real API', () => {
  it('returns the first 20 entries, newest first, with the server defaults', async () => {
    const page = await init({ apiKey: readKey, baseUrl: apiUrl }).getLogs();
    // The server adds `nextCursor` (SPEC §19) to the seed's meta; the SDK passes the body through.
    expect(page.meta).toEqual({
      page: 1,
      limit: 20,
      total: EMAILS,
      totalPages: 3,
      nextCursor: expect.any(String),
    });
    expect(page.data).toEqual(expected.slice(0, 20));
  });

  it('resolves to exactly the body the endpoint returns', async () => {
    const raw = await fetch(`${apiUrl}/emails/logs?page=2&limit=7`, {
      headers: { authorization: `Bearer ${readKey}` },
    });
    const body = (await raw.json()) as LogsResponse;
    const page = await init({ apiKey: readKey, baseUrl: apiUrl }).getLogs({ page: 2, limit: 7 });
    expect(page).toEqual(body);
    expect(page.data).toEqual(expected.slice(7, 14));
  });

  it('honours explicit page and limit, up to an empty page past the end', async () => {
    const client = init({ apiKey: readKey, baseUrl: apiUrl });
    const last = await client.getLogs({ page: 3, limit: 20 });
    expect(last.meta).toEqual({ page: 3, limit: 20, total: EMAILS, totalPages: 3, nextCursor: null });
    expect(last.data).toEqual(expected.slice(40));
    const all = await client.getLogs({ limit: 100 });
    expect(all.data).toEqual(expected);
    const past = await client.getLogs({ page: 4, limit: 20 });
    expect(past).toEqual({
      data: [],
      meta: { page: 4, limit: 20, total: EMAILS, totalPages: 3, nextCursor: null },
    });
  });

  it('surfaces a 400 for a bad limit without retrying it', async () => {
    proxy.reset();
    const err = await init({ apiKey: readKey, baseUrl: proxyUrl, ...fast })
      .getLogs({ limit: 101 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TernApiError);
    expect(err).toMatchObject({ status: 400, isMissingScope: false, isUnauthorized: false });
    expect((err as TernApiError).message).toMatch(/limit/);
    expect(proxy.seen).toHaveLength(1);
  });
});

describe('credential errors', () => {
  it('tells a key without email:read (403, missing scope) apart', async () => {
    const { key } = await createKey(['templates:read']);
    const err = await init({ apiKey: key, baseUrl: apiUrl })
      .getLogs()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TernApiError);
    expect(err).toMatchObject({
      status: 403,
      message: 'Missing required API key scope',
      isMissingScope: true,
      isUnauthorized: false,
    });
    expect((err as TernApiError).body).toMatchObject({
      statusCode: 403,
      message: 'Missing required API key scope',
    });
  });

  it('gets 401 once its key is revoked', async () => {
    const { id, key } = await createKey(['email:read']);
    const client = init({ apiKey: key, baseUrl: apiUrl });
    expect((await client.getLogs({ limit: 1 })).meta.total).toBe(EMAILS);
    await revokeKey(id);
    const err = await client.getLogs({ limit: 1 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 401, isUnauthorized: true, isMissingScope: false });
  });

  it('gets 401 for a key the server never issued', async () => {
    const err = await init({ apiKey: `tern_${'x'.repeat(40)}`, baseUrl: apiUrl })
      .getLogs()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 401, isUnauthorized: true });
  });
});

describe('retries through a faulty proxy', () => {
  it('waits out a 429 with Retry-After: 1 and a 503, then returns the page', async () => {
    proxy.reset();
    proxy.faults.push({ status: 429, headers: { 'retry-after': '1' } }, { status: 503 });
    const page = await init({ apiKey: readKey, baseUrl: proxyUrl, ...fast }).getLogs({ limit: 5 });
    expect(page.data).toEqual(expected.slice(0, 5));
    expect(proxy.seen).toHaveLength(3);
    const [first, second] = proxy.seen;
    // The second attempt came only after the server's Retry-After (1 s), not the 5 ms back-off.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
  });

  it('throws the last 5xx once maxRetries is spent', async () => {
    proxy.reset();
    proxy.faults.push({ status: 503 }, { status: 502 });
    const err = await init({ apiKey: readKey, baseUrl: proxyUrl, ...fast, maxRetries: 1 })
      .getLogs()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 502, message: 'injected 502' });
    expect(proxy.seen).toHaveLength(2);
  });

  it('times out a stalled request and retries it', async () => {
    proxy.reset();
    proxy.faults.push('hang');
    const page = await init({ apiKey: readKey, baseUrl: proxyUrl, ...fast, timeoutMs: 300 }).getLogs({
      limit: 2,
    });
    expect(page.data).toEqual(expected.slice(0, 2));
    expect(proxy.seen).toHaveLength(2);

    proxy.reset();
    proxy.faults.push('hang');
    const err = await init({ apiKey: readKey, baseUrl: proxyUrl, timeoutMs: 300, maxRetries: 0 })
      .getLogs()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TernTimeoutError);
    expect(err).toMatchObject({ status: 0, code: 'TIMEOUT' });
  });

  it('reports a refused connection as a network error after retrying', async () => {
    // A port that was just free: bind, read it, release it.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const err = await init({ apiKey: readKey, baseUrl: `http://127.0.0.1:${port}`, ...fast })
      .getLogs()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 0, code: 'NETWORK_ERROR', isNetworkError: true });
    expect((err as Error).cause).toBeDefined();
  });
});

describe('logs() iterator', () => {
  it('yields every entry exactly once, newest first, across pages', async () => {
    proxy.reset();
    const seen: EmailLogEntry[] = [];
    for await (const entry of init({ apiKey: readKey, baseUrl: proxyUrl }).logs({ limit: 7 }))
      seen.push(entry);
    expect(seen).toEqual(expected);
    expect(proxy.seen.map((r) => r.url)).toEqual(
      Array.from({ length: 7 }, (_, i) => `/emails/logs?page=${i + 1}&limit=7`),
    );
  });

  it('uses 100 per page by default', async () => {
    proxy.reset();
    const ids: string[] = [];
    for await (const entry of init({ apiKey: readKey, baseUrl: proxyUrl }).logs()) ids.push(entry.id);
    expect(ids).toEqual(expected.map((e) => e.id));
    expect(proxy.seen.map((r) => r.url)).toEqual(['/emails/logs?page=1&limit=100']);
  });

  it('still yields each entry once when new emails arrive mid-walk (they push older ones down)', async () => {
    const client = init({ apiKey: readKey, baseUrl: apiUrl });
    const ids: string[] = [];
    let injected = false;
    for await (const entry of client.logs({ limit: 10 })) {
      ids.push(entry.id);
      if (!injected) {
        injected = true;
        // Three newer emails land on top of page 1 while the walk is on page 1.
        const fresh = [901, 902, 903].flatMap((n) => emailEvents(TENANT, n, 1, false));
        await applyBatchToPostgres(pool, fresh, [], newBatchId);
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expected.map((e) => e.id));
  });
});
