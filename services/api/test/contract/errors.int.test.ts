import { PassThrough } from 'node:stream';
import { createJwtVerifier, signLegacyTrackingToken, signTrackingToken } from '@tern/auth';
import { type ErrorStatus, errorBodySchema, errorBodySchemaFor } from '@tern/contracts';
import { createClickHouse, createPostgres, migrateClickHouse, migratePostgres } from '@tern/stores';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../../test/support/services.js';
import { createApiApp } from '../../src/index.js';
import { eventsFor, generateEmails } from '../datasets.js';
import { openSendingWorld, type SendingWorld, TRACKING_SECRET, wallClock } from '../sending-support.js';
import {
  bearer,
  buildApp,
  closeAll,
  createKey,
  JWT_SECRET,
  jwtFor,
  NOW,
  openApp,
  openStores,
  project,
  type Stores,
  suffix,
  testTenants,
  unreachableStores,
} from '../support.js';

describe('the error contract', () => {
  // SPEC §4 and issue 25: every error body, whatever raised it, is `{ statusCode, error, message,
  // code }` with `code` one of the contract's codes of that status — over a real socket.

  const { clock, A } = testTenants('errs');
  let stores: Stores;
  let app: FastifyInstance;
  let base: string;
  let readKey: string;

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock, { limits: { rateLimit: { max: 40, timeWindowMs: 60_000 } } }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    readKey = (await createKey(app, jwtFor(clock, A), A, { scopes: ['templates:read'] })).key;
  });

  afterAll(() => closeAll(app, stores));

  async function call(path: string, init: RequestInit = {}) {
    const res = await fetch(`${base}${path}`, init);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  const owner = () => ({ ...bearer(jwtFor(clock, A, 'owner')), 'content-type': 'application/json' });

  function expectContract(status: ErrorStatus, body: Record<string, unknown>, code: string) {
    expect(errorBodySchema.safeParse(body).success, JSON.stringify(body)).toBe(true);
    expect(errorBodySchemaFor(status).safeParse(body).success, JSON.stringify(body)).toBe(true);
    expect(body.code).toBe(code);
  }

  describe('every error body carries a code of the contract', () => {
    it.each([
      ['400 validation', () => call('/emails/logs?limit=0', { headers: owner() }), 400, 'FST_ERR_VALIDATION'],
      [
        '400 unreadable JSON',
        () => call('/templates', { method: 'POST', headers: owner(), body: '{' }),
        400,
        'BAD_REQUEST',
      ],
      ['401 no credential', () => call('/templates'), 401, 'MISSING_CREDENTIAL'],
      [
        '401 unknown key',
        () => call('/templates', { headers: { 'x-api-key': 'tern_nope' } }),
        401,
        'INVALID_CREDENTIAL',
      ],
      [
        '403 missing scope',
        () => call('/emails/logs', { headers: { 'x-api-key': readKey } }),
        403,
        'MISSING_SCOPE',
      ],
      ['404 resource', () => call('/templates/tpl_missing', { headers: owner() }), 404, 'NOT_FOUND'],
      ['404 route', () => call('/no/such/route', { headers: owner() }), 404, 'ROUTE_NOT_FOUND'],
      [
        '413 body too large',
        () =>
          call('/templates', {
            method: 'POST',
            headers: owner(),
            body: JSON.stringify({ name: 'x', subject: 'y', html: 'z'.repeat(2 * 1024 * 1024) }),
          }),
        413,
        'PAYLOAD_TOO_LARGE',
      ],
    ] as const)('%s', async (_what, request, status, code) => {
      const { status: got, body } = await request();
      expect(got).toBe(status);
      expectContract(status, body, code);
    });

    it('409 conflict', async () => {
      const payload = JSON.stringify({ id: 'tpl_dup', name: 'Dup', subject: 's', text: 't' });
      expect((await call('/templates', { method: 'POST', headers: owner(), body: payload })).status).toBe(
        201,
      );
      const { status, body } = await call('/templates', { method: 'POST', headers: owner(), body: payload });
      expect(status).toBe(409);
      expectContract(409, body, 'CONFLICT');
    });

    it('429 rate limited', async () => {
      let last = await call('/templates', { headers: { 'x-api-key': readKey } });
      for (let i = 0; i < 60 && last.status !== 429; i++)
        last = await call('/templates', { headers: { 'x-api-key': readKey } });
      expect(last.status).toBe(429);
      expectContract(429, last.body, 'RATE_LIMITED');
    });
  });

  describe('stores that do not answer', () => {
    let down: FastifyInstance;
    let downBase: string;

    beforeAll(async () => {
      down = await createApiApp({
        data: unreachableStores(),
        jwt: createJwtVerifier({ secret: JWT_SECRET, now: () => clock.now().getTime() }),
        policy: { now: clock.now, retentionDays: 90 },
        limits: { rateLimit: false },
      });
      await down.listen({ port: 0, host: '127.0.0.1' });
      downBase = `http://127.0.0.1:${(down.server.address() as { port: number }).port}`;
    });

    afterAll(async () => {
      await down?.close();
    });

    it('503 UNAVAILABLE with Retry-After when a query cannot reach Postgres, 503 NOT_READY on /ready', async () => {
      const res = await fetch(`${downBase}/templates`, { headers: bearer(jwtFor(clock, A)) });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expectContract(503, (await res.json()) as Record<string, unknown>, 'UNAVAILABLE');
      const ready = await fetch(`${downBase}/ready`);
      expect(ready.status).toBe(503);
      expectContract(503, (await ready.json()) as Record<string, unknown>, 'NOT_READY');
    });
  });
});

describe('the edges over a real socket', () => {
  // The edges of the API over a real socket, with its own logger captured (issues 24 #7, #12): a
  // click link is a credential and may carry personal data, an address in a path is personal data,
  // so no log line may name either; every answer says nosniff.
  let world: SendingWorld;
  let base: string;
  const lines: string[] = [];
  const TENANT = `track-${suffix()}`;

  beforeAll(async () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    world = await openSendingWorld({
      sender: false,
      app: () => ({ http: { logger: { level: 'info', stream } } }),
    });
    base = await world.app.listen({ host: '127.0.0.1', port: 0 });
  }, 120_000);

  afterAll(async () => {
    await world?.close();
  });

  const click = (url: string, sign = signTrackingToken) =>
    sign(TRACKING_SECRET, { kind: 'click', tenantId: TENANT, emailId: 'em_track1', url });

  describe('GET /t/c/:token — the Location of a URL with non-Latin-1 characters', () => {
    it.each([
      ['https://example.com/search?q=日本', 'https://example.com/search?q=%E6%97%A5%E6%9C%AC'],
      ['https://example.com/€', 'https://example.com/%E2%82%AC'],
      ['https://例え.jp/パス?x=ü#frag€', 'https://xn--r8jz45g.jp/%E3%83%91%E3%82%B9?x=%C3%BC#frag%E2%82%AC'],
      ['https://example.com/a b?c=d e', 'https://example.com/a%20b?c=d%20e'],
      ['https://example.com/offer?a=1&b=2', 'https://example.com/offer?a=1&b=2'],
    ])('%s → 302 to %s, and no log line names the token', async (url, location) => {
      for (const token of [click(url), click(url, signLegacyTrackingToken)]) {
        const before = lines.length;
        const res = await fetch(`${base}/t/c/${token}`, { redirect: 'manual' });
        expect(res.status).toBe(302);
        expect(res.headers.get('location')).toBe(location);
        await new Promise((r) => setTimeout(r, 50));
        const logged = lines.slice(before).join('\n');
        expect(logged).not.toContain(token);
        expect(logged).not.toContain('/t/c/');
      }
    });

    it('a URL the WHATWG parser refuses still gets a valid header (bytes percent-encoded), never a 500', async () => {
      const res = await fetch(`${base}/t/c/${click('https://exa mple.com:99999/ü')}`, { redirect: 'manual' });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe('https://exa%20mple.com:99999/%C3%BC');
    });
  });

  describe('GET /t/o/:token — one open per email and reader within OPEN_DEDUP_SECONDS', () => {
    const openedEvents = async (emailId: string) =>
      Number(
        (
          await world.stores.pool.query(
            `SELECT count(*) AS n FROM event_log WHERE key = $1 AND value::jsonb->>'type' = 'email.opened'`,
            [emailId],
          )
        ).rows[0].n,
      );

    it('a replayed pixel is answered every time but recorded once per reader', async () => {
      const emailId = `em_open${suffix()}`;
      const token = signTrackingToken(TRACKING_SECRET, { kind: 'open', tenantId: TENANT, emailId });
      const fetchPixel = async (userAgent: string) => {
        const res = await fetch(`${base}/t/o/${token}`, { headers: { 'user-agent': userAgent } });
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe('image/gif');
      };
      for (let i = 0; i < 5; i++) await fetchPixel('Mozilla/5.0 (reader one)');
      expect(await openedEvents(emailId)).toBe(1);
      await fetchPixel('Mozilla/5.0 (reader two)');
      expect(await openedEvents(emailId)).toBe(2);
      // Another email, same reader: its own open.
      const other = `em_open${suffix()}`;
      const otherToken = signTrackingToken(TRACKING_SECRET, {
        kind: 'open',
        tenantId: TENANT,
        emailId: other,
      });
      expect(
        (await fetch(`${base}/t/o/${otherToken}`, { headers: { 'user-agent': 'Mozilla/5.0 (reader one)' } }))
          .status,
      ).toBe(200);
      expect(await openedEvents(other)).toBe(1);
    });
  });

  describe('no address in logs; nosniff on every answer', () => {
    it('DELETE /suppressions/{email}: the address is in no log line, with or without a credential', async () => {
      const owner = jwtFor(wallClock, TENANT);
      const address = `Erase.Me+${suffix()}@Example.test`;
      const created = await fetch(`${base}/suppressions`, {
        method: 'POST',
        headers: { ...bearer(owner), 'content-type': 'application/json' },
        body: JSON.stringify({ email: address }),
      });
      expect(created.status).toBe(201);
      const before = lines.length;
      const removed = await fetch(`${base}/suppressions/${encodeURIComponent(address)}`, {
        method: 'DELETE',
        headers: bearer(owner),
      });
      expect(removed.status).toBe(204);
      const again = await fetch(`${base}/suppressions/${address}`, {
        method: 'DELETE',
        headers: bearer(owner),
      });
      expect(again.status).toBe(404);
      expect((await fetch(`${base}/suppressions/${address}`, { method: 'DELETE' })).status).toBe(401);
      await new Promise((r) => setTimeout(r, 50));
      const logged = lines.slice(before).join('\n');
      expect(logged).toContain('/suppressions/[address]');
      for (const form of [
        address,
        encodeURIComponent(address),
        address.toLowerCase(),
        'Erase.Me',
        'erase.me',
      ]) {
        expect(logged).not.toContain(form);
      }
    });

    it.each([
      ['GET', '/health', 200],
      ['GET', '/emails/logs', 401],
      ['GET', '/no/such/route', 404],
      ['GET', '/t/o/garbage', 404],
      ['POST', '/suppressions', 401],
    ])('%s %s → %i with X-Content-Type-Options: nosniff', async (method, path, status) => {
      const res = await fetch(`${base}${path}`, { method });
      expect(res.status).toBe(status);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    });

    it.each([
      ['/%', '/%', 400, 'BAD_REQUEST'],
      ['/emails/%zz', '/emails/%zz', 400, 'BAD_REQUEST'],
      ['a 9 000-character id', `/emails/${'e'.repeat(9000)}`, 414, 'URI_TOO_LONG'],
    ])(
      'refused before any route (%s) → %i %s of the contract, with nosniff',
      async (_label, path, status, code) => {
        const res = await fetch(`${base}${path}`);
        expect(res.status).toBe(status);
        expect(res.headers.get('x-content-type-options')).toBe('nosniff');
        expect(((await res.json()) as { code: string }).code).toBe(code);
      },
    );

    it('the pixel and the redirect say nosniff too', async () => {
      const open = signTrackingToken(TRACKING_SECRET, {
        kind: 'open',
        tenantId: TENANT,
        emailId: 'em_nosniff',
      });
      const pixel = await fetch(`${base}/t/o/${open}`);
      expect(pixel.status).toBe(200);
      expect(pixel.headers.get('x-content-type-options')).toBe('nosniff');
      const redirect = await fetch(`${base}/t/c/${click('https://example.com/')}`, { redirect: 'manual' });
      expect(redirect.status).toBe(302);
      expect(redirect.headers.get('x-content-type-options')).toBe('nosniff');
    });
  });
});

describe('a failed query never poisons a pooled connection', () => {
  /**
   * Issue 24, item 1: after one failing query, pg-pool drops its client and builds a new one. On
   * the embedded PGlite the new client speaks to the same single session, where the named prepared
   * statements of the dropped client still exist: every later named statement failed with 42P05
   * ("already exists") and the log answered 500 to every tenant. Each connection handed out now
   * starts from a reset session. The same test runs against the Postgres server.
   */
  type Kind = 'pglite' | 'server';

  async function openKind(kind: Kind): Promise<Pick<Stores, 'pool' | 'ch' | 'close'>> {
    if (kind === 'server') return openStores();
    const dataDir = tempDir('tern-session-reset-');
    const store = await createPostgres({ dataDir });
    await migratePostgres(store.pool);
    const ch = createClickHouse({ dataDir });
    await migrateClickHouse(ch.client);
    return {
      pool: store.pool,
      ch: ch.client,
      async close() {
        await ch.close();
        await store.close();
      },
    };
  }

  describe.each<Kind>(['pglite', 'server'])(
    'a failing query does not break the log for others (%s)',
    (kind) => {
      const { clock, A, B } = testTenants(`reset-${kind}`);
      let stores: Pick<Stores, 'pool' | 'ch' | 'close'>;
      let app: FastifyInstance;
      let keyA: string;
      let keyB: string;

      beforeAll(async () => {
        stores = await openKind(kind);
        app = await buildApp(stores, clock);
        const common = { now: NOW, spanDays: 10, templates: ['t1'] };
        const emailsA = generateEmails({ ...common, tenantId: A, count: 5, seed: 1 });
        const emailsB = generateEmails({ ...common, tenantId: B, count: 5, seed: 2 });
        await project(stores, eventsFor([...emailsA, ...emailsB], 3));
        keyA = (await createKey(app, jwtFor(clock, A, 'admin'), A, { scopes: ['email:read'] })).key;
        keyB = (await createKey(app, jwtFor(clock, B, 'admin'), B, { scopes: ['email:read'] })).key;
      });

      afterAll(async () => {
        await app?.close();
        await stores?.close();
      });

      /** B's log page, then the newest email of it and its content: statuses by path. */
      const readAsB = async () => {
        const headers = { 'x-api-key': keyB };
        const logs = await app.inject({ method: 'GET', url: '/emails/logs', headers });
        const statuses: (string | number)[][] = [['/emails/logs', logs.statusCode]];
        if (logs.statusCode !== 200) return statuses;
        const ids: string[] = logs.json().data.map((e: { id: string }) => e.id);
        expect(ids.length).toBeGreaterThan(0);
        for (const url of [`/emails/${ids[0]}`, `/emails/${ids[0]}/content`]) {
          const res = await app.inject({ method: 'GET', url, headers });
          statuses.push([url, res.statusCode]);
        }
        return statuses;
      };
      // What B is answered on a healthy connection: the log lists B's emails; the email and its
      // content are looked up (their answer, 200 or 404, needs the named statements to run).
      let healthy: (string | number)[][];
      const ok = () => healthy;

      it('reads as tenant B after a query of tenant A failed on the pool', async () => {
        // B's reads prepare their named statements on the connection.
        healthy = await readAsB();
        expect(healthy[0]).toEqual(['/emails/logs', 200]);
        for (const [, status] of healthy) expect(status).toBeLessThan(500);
        // Tenant A's request whose query fails in the database (a division by zero stands for any
        // query error: a foreign-key race, a failing campaign retry): the pool drops the client.
        await expect(
          stores.pool.query({
            text: 'SELECT 1 / (count(*) - count(*)) FROM email_logs WHERE tenant_id = $1',
            values: [A],
          }),
        ).rejects.toMatchObject({ code: '22012' });
        expect(await readAsB()).toEqual(ok());
      });

      it('reads as tenant B after tenant A sent a filter the database refuses', async () => {
        expect(await readAsB()).toEqual(ok());
        const res = await app.inject({
          method: 'GET',
          url: '/emails/logs?q=a%00b',
          headers: { 'x-api-key': keyA },
        });
        expect(res.statusCode).toBeLessThan(500);
        expect(await readAsB()).toEqual(ok());
        // Named statements still work over several failures in a row.
        for (let i = 0; i < 3; i++) {
          await expect((stores.pool as pg.Pool).query('SELECT 1 / 0')).rejects.toMatchObject({
            code: '22012',
          });
          expect(await readAsB()).toEqual(ok());
        }
      });
    },
  );
});
