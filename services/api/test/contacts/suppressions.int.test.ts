import { Writable } from 'node:stream';
import { createUnsubscribeToken, listUnsubscribeHeaders } from '@tern/domain';
import { isSuppressed, suppressedAmong } from '@tern/read-models';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  buildApp,
  closeAll,
  createKey,
  eventsOf,
  jwtFor,
  NOW,
  openApp,
  project,
  type Stores,
  TRACKING_SECRET,
  testApp,
  testTenants,
} from '../support.js';

describe('suppressions (SPEC §13)', () => {
  // SPEC §13 on the real app and Postgres; the automatic entries through the projector's own sink.

  const file = testApp('sup');
  const { clock, run, A, B } = file;

  let readKey: string;
  let writeKey: string;

  const post = (payload: unknown, headers: Record<string, string> = { 'x-api-key': writeKey }) =>
    file.app.inject({ method: 'POST', url: '/suppressions', headers, payload: payload as object });
  const del = (email: string, headers: Record<string, string> = { 'x-api-key': writeKey }) =>
    file.app.inject({ method: 'DELETE', url: `/suppressions/${encodeURIComponent(email)}`, headers });
  const list = async (tenantJwt = jwtFor(clock, A)) =>
    (await file.app.inject({ url: '/suppressions?limit=100', headers: bearer(tenantJwt) })).json();

  beforeAll(async () => {
    const owner = jwtFor(clock, A);
    readKey = (await createKey(file.app, owner, A, { scopes: ['suppressions:read'] })).key;
    writeKey = (await createKey(file.app, owner, A, { scopes: ['suppressions:write'] })).key;
  });

  describe('POST /suppressions', () => {
    it('201 lowercased with reason, source manual and createdAt; 200 unchanged when present', async () => {
      const res = await post({ email: 'Ada.Lovelace@Example.COM', reason: 'asked by phone' });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json()).toEqual({
        email: 'ada.lovelace@example.com',
        reason: 'asked by phone',
        source: 'manual',
        createdAt: NOW,
      });
      clock.advance(5000);
      const again = await post({ email: 'ADA.lovelace@example.com', reason: 'other reason' });
      clock.set(NOW);
      expect(again.statusCode).toBe(200);
      expect(again.json()).toEqual(res.json());
      expect(await isSuppressed(file.stores.pool, A, 'ada.LOVELACE@example.com')).toBe(true);
      expect(await isSuppressed(file.stores.pool, B, 'ada.lovelace@example.com')).toBe(false);
      expect(
        await suppressedAmong(file.stores.pool, [
          { tenantId: B, email: 'ada.lovelace@example.com' },
          { tenantId: A, email: 'ada.LOVELACE@example.com' },
          { tenantId: A, email: 'nobody@example.com' },
          { tenantId: A, email: ' Ada.Lovelace@example.com ' },
        ]),
      ).toEqual([false, true, false, true]);
    });

    it('201 without a reason: reason null; a JWT of any role may write', async () => {
      const res = await post({ email: `member-${run}@example.com` }, bearer(jwtFor(clock, A, 'member')));
      expect(res.statusCode).toBe(201);
      expect(res.json().reason).toBeNull();
    });

    it.each([
      [{ email: 'not-an-address' }, 'body.email'],
      [{}, 'body.email'],
      [{ email: 'a@b.test', reason: '' }, 'body.reason'],
      [{ email: 'a@b.test', source: 'bounce' }, 'source'],
    ])('400 names the field: %j', async (payload, field) => {
      const res = await post(payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toContain(field);
    });

    it('403 for a key with only suppressions:read; 401 without a credential', async () => {
      const res = await post({ email: 'x@y.test' }, { 'x-api-key': readKey });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({
        message: 'Missing required API key scope',
        missingScope: 'suppressions:write',
      });
      expect((await post({ email: 'x@y.test' }, {})).statusCode).toBe(401);
    });
  });

  describe('GET /suppressions', () => {
    it('200 newest first, the tenant’s own only; 403 for a write-only key; 400 for a bad page', async () => {
      const tenant = `sup-list-${run}`;
      const h = bearer(jwtFor(clock, tenant));
      for (const email of ['one@x.test', 'two@x.test', 'three@x.test']) {
        clock.advance(1000);
        expect((await post({ email }, h)).statusCode).toBe(201);
      }
      clock.set(NOW);
      const res = await file.app.inject({ url: '/suppressions?limit=2', headers: h });
      expect(res.statusCode).toBe(200);
      expect(res.json().data.map((s: { email: string }) => s.email)).toEqual(['three@x.test', 'two@x.test']);
      expect(res.json().meta).toEqual({ page: 1, limit: 2, total: 3, totalPages: 2 });
      expect((await list()).data.map((s: { email: string }) => s.email)).not.toContain('one@x.test');
      expect(
        (await file.app.inject({ url: '/suppressions', headers: { 'x-api-key': readKey } })).statusCode,
      ).toBe(200);
      expect(
        (await file.app.inject({ url: '/suppressions', headers: { 'x-api-key': writeKey } })).statusCode,
      ).toBe(403);
      expect((await file.app.inject({ url: '/suppressions?page=0', headers: h })).statusCode).toBe(400);
    });
  });

  describe('DELETE /suppressions/:email', () => {
    it('204 in any case, then 404; another tenant’s address is 404', async () => {
      await post({ email: `gone-${run}@x.test` });
      expect((await del(`gone-${run}@x.test`, bearer(jwtFor(clock, B)))).statusCode).toBe(404);
      expect((await del(`GONE-${run}@X.test`)).statusCode).toBe(204);
      expect(await isSuppressed(file.stores.pool, A, `gone-${run}@x.test`)).toBe(false);
      expect((await del(`gone-${run}@x.test`)).statusCode).toBe(404);
      expect((await del('x@y.test', { 'x-api-key': readKey })).statusCode).toBe(403);
    });
  });

  describe('automatic entries from the projection (SPEC §13)', () => {
    const queued = (to: string) => ({
      type: 'email.queued',
      occurredAt: '2026-06-15T09:00:00Z',
      data: { toEmail: to, subject: 's' },
    });

    it('a hard bounce → hard_bounce/bounce; a complaint → complaint/complaint; a soft bounce → nothing', async () => {
      const tenant = `sup-auto-${run}`;
      await project(file.stores, [
        ...eventsOf(tenant, 'e-hard', [
          queued('Hard@Example.com'),
          { type: 'email.bounced', occurredAt: '2026-06-15T09:01:00Z', data: { bounceType: 'hard' } },
        ]),
        ...eventsOf(tenant, 'e-soft', [
          queued('soft@example.com'),
          { type: 'email.bounced', occurredAt: '2026-06-15T09:01:00Z', data: { bounceType: 'soft' } },
        ]),
        ...eventsOf(tenant, 'e-compl', [
          queued('compl@example.com'),
          { type: 'email.delivered', occurredAt: '2026-06-15T09:01:00Z' },
          { type: 'email.complained', occurredAt: '2026-06-15T09:02:00Z' },
        ]),
      ]);
      const entries = (await list(jwtFor(clock, tenant))).data;
      expect(
        entries.map(({ email, reason, source }: Record<string, string>) => ({ email, reason, source })),
      ).toEqual(
        expect.arrayContaining([
          { email: 'hard@example.com', reason: 'hard_bounce', source: 'bounce' },
          { email: 'compl@example.com', reason: 'complaint', source: 'complaint' },
        ]),
      );
      expect(entries).toHaveLength(2);
    });

    it('three soft bounces of one address within 7 days → soft_bounce/bounce (SPEC §21); spread wider, or redelivered, they do not', async () => {
      const tenant = `sup-soft-${run}`;
      const soft = (id: string, to: string, at: string) =>
        eventsOf(tenant, id, [
          { ...queued(to), occurredAt: at },
          { type: 'email.bounced', occurredAt: at, data: { bounceType: 'soft', smtpStatus: '4.2.2' } },
        ]);
      // Two soft bounces, and the second one again (a redelivered event is one bounce): not yet.
      const first = soft('s1', 'Soft3@Example.com', '2026-06-01T09:00:00Z');
      const second = soft('s2', 'soft3@example.com', '2026-06-05T09:00:00Z');
      await project(file.stores, [...first, ...second]);
      await project(file.stores, second);
      expect(await isSuppressed(file.stores.pool, tenant, 'soft3@example.com')).toBe(false);
      // Spread over more than 7 days: days 1, 5 and 12 never have three within a window.
      await project(file.stores, soft('s3', 'soft3@example.com', '2026-06-12T09:00:01Z'));
      expect(await isSuppressed(file.stores.pool, tenant, 'soft3@example.com')).toBe(false);
      // A third within 7 days of the second and the fourth (days 5, 8, 12): suppressed.
      await project(file.stores, soft('s4', 'soft3@example.com', '2026-06-08T09:00:00Z'));
      const entries = (await list(jwtFor(clock, tenant))).data;
      expect(
        entries.map(({ email, reason, source }: Record<string, string>) => ({ email, reason, source })),
      ).toEqual([{ email: 'soft3@example.com', reason: 'soft_bounce', source: 'bounce' }]);
      // Another address with the same bounces on other days is its own count.
      await project(file.stores, [
        ...soft('o1', 'other@example.com', '2026-06-01T09:00:00Z'),
        ...soft('o2', 'other@example.com', '2026-06-20T09:00:00Z'),
      ]);
      expect(await isSuppressed(file.stores.pool, tenant, 'other@example.com')).toBe(false);
    });

    it('a bounce that arrives before its email.queued is applied once the address is known', async () => {
      const tenant = `sup-late-${run}`;
      const [q, bounce] = eventsOf(tenant, 'e1', [
        queued('late@example.com'),
        { type: 'email.bounced', occurredAt: '2026-06-15T09:01:00Z', data: { bounceType: 'hard' } },
      ]);
      await project(file.stores, [bounce!]);
      expect(await isSuppressed(file.stores.pool, tenant, 'late@example.com')).toBe(false);
      await project(file.stores, [q!]);
      expect(await isSuppressed(file.stores.pool, tenant, 'late@example.com')).toBe(true);
    });

    it('replays and duplicates add nothing; a manual entry keeps its reason; a removed one is not put back by later events', async () => {
      const tenant = `sup-replay-${run}`;
      const h = bearer(jwtFor(clock, tenant));
      expect((await post({ email: 'kept@example.com', reason: 'mine' }, h)).statusCode).toBe(201);
      const events = [
        ...eventsOf(tenant, 'e1', [
          queued('kept@example.com'),
          { type: 'email.bounced', occurredAt: '2026-06-15T09:01:00Z', data: { bounceType: 'hard' } },
        ]),
        ...eventsOf(tenant, 'e2', [
          queued('removed@example.com'),
          { type: 'email.complained', occurredAt: '2026-06-15T09:01:00Z' },
        ]),
      ];
      await project(file.stores, events);
      await project(file.stores, events); // redelivered
      const entries = (await list(jwtFor(clock, tenant))).data;
      expect(entries).toHaveLength(2);
      expect(entries.find((e: { email: string }) => e.email === 'kept@example.com')).toMatchObject({
        reason: 'mine',
        source: 'manual',
      });
      expect((await del('removed@example.com', h)).statusCode).toBe(204);
      // Later events of the same email (an open, a second complaint) do not put the address back.
      await project(
        file.stores,
        eventsOf(tenant, 'e2', [
          { type: 'email.opened', occurredAt: '2026-06-15T09:05:00Z' },
          { type: 'email.complained', occurredAt: '2026-06-15T09:06:00Z' },
        ]),
      );
      expect(await isSuppressed(file.stores.pool, tenant, 'removed@example.com')).toBe(false);
    });
  });
});

describe('unsubscribe', () => {
  const { clock, A, B } = testTenants('unsub');
  const SOURCE = 'campaign:cmp_spring';

  let stores: Stores;
  let app: FastifyInstance;

  const tokenFor = (tenantId: string, email: string, source = SOURCE) =>
    createUnsubscribeToken(TRACKING_SECRET, { tenantId, email, source });

  async function createContact(tenantId: string, email: string) {
    const res = await app.inject({
      method: 'POST',
      url: '/contacts',
      headers: bearer(jwtFor(clock, tenantId)),
      payload: { email },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string };
  }

  const contactRow = async (tenantId: string, email: string) =>
    (
      await stores.pool.query(
        'SELECT subscribed, unsubscribed_at FROM contacts WHERE tenant_id = $1 AND email = $2',
        [tenantId, email],
      )
    ).rows[0] as { subscribed: boolean; unsubscribed_at: Date | null } | undefined;
  const suppressionRows = async (tenantId: string) =>
    (
      await stores.pool.query(
        'SELECT email, reason, source, created_at FROM suppressions WHERE tenant_id = $1 ORDER BY email',
        [tenantId],
      )
    ).rows;

  const oneClick = (
    token: string,
    payload = 'List-Unsubscribe=One-Click',
    contentType = 'application/x-www-form-urlencoded',
  ) => app.inject({ method: 'POST', url: `/u/${token}`, headers: { 'content-type': contentType }, payload });

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock));
  });

  afterAll(() => closeAll(app, stores));

  describe('GET /u/:token', () => {
    it('200: a confirmation page naming the address, with a form that POSTs back; changes nothing', async () => {
      await createContact(A, 'page@example.com');
      const res = await app.inject({ method: 'GET', url: `/u/${tokenFor(A, 'page@example.com')}` });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.body).toContain('page@example.com');
      expect(res.body).toMatch(
        /<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">/,
      );
      expect(res.body).not.toMatch(/<script/i);
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toMatch(
        /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/,
      );
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(await contactRow(A, 'page@example.com')).toEqual({ subscribed: true, unsubscribed_at: null });
      expect(await suppressionRows(A)).toEqual([]);
    });

    it('escapes the address in the page', async () => {
      const res = await app.inject({ method: 'GET', url: `/u/${tokenFor(A, '"<b>"@example.com')}` });
      expect(res.body).toContain('&#34;&#60;b&#62;&#34;@example.com');
      expect(res.body).not.toContain('<b>');
    });

    it('404 for a forged, altered or garbage token', async () => {
      const good = tokenFor(A, 'page@example.com');
      const forged = createUnsubscribeToken('another-secret-0123456789', {
        tenantId: A,
        email: 'page@example.com',
        source: SOURCE,
      });
      const altered = `${good.slice(0, 10)}${good[10] === 'A' ? 'B' : 'A'}${good.slice(11)}`;
      for (const token of [forged, altered, 'nope', 'A'.repeat(300)]) {
        const res = await app.inject({ method: 'GET', url: `/u/${token}` });
        expect(res.statusCode, token).toBe(404);
        expect(res.json()).toEqual({
          statusCode: 404,
          error: 'Not Found',
          message: 'Unknown unsubscribe link',
          code: 'NOT_FOUND',
        });
      }
    });
  });

  describe('POST /u/:token', () => {
    it('200 (RFC 8058 one click): the contact is unsubscribed and the address suppressed as "unsubscribed"', async () => {
      await createContact(A, 'click@example.com');
      clock.advance(5000);
      const res = await oneClick(tokenFor(A, 'Click@Example.com'));
      clock.set(NOW);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.body).toContain('You are unsubscribed');
      const at = new Date(Date.parse(NOW) + 5000);
      expect(await contactRow(A, 'click@example.com')).toEqual({ subscribed: false, unsubscribed_at: at });
      expect(await suppressionRows(A)).toContainEqual({
        email: 'click@example.com',
        reason: 'unsubscribed',
        source: 'unsubscribe',
        created_at: at,
      });
      const api = await app.inject({
        method: 'GET',
        url: '/contacts?limit=100',
        headers: bearer(jwtFor(clock, A)),
      });
      expect(api.json().data.find((c: { email: string }) => c.email === 'click@example.com')).toMatchObject({
        subscribed: false,
        unsubscribedAt: at.toISOString(),
      });
    });

    it('is idempotent: a second click changes nothing and answers 200 again', async () => {
      const token = tokenFor(A, 'click@example.com');
      const before = {
        contact: await contactRow(A, 'click@example.com'),
        suppressions: await suppressionRows(A),
      };
      clock.advance(60_000);
      expect((await oneClick(token)).statusCode).toBe(200);
      clock.set(NOW);
      expect({
        contact: await contactRow(A, 'click@example.com'),
        suppressions: await suppressionRows(A),
      }).toEqual(before);
    });

    it('accepts the one-click body as multipart, the page’s form, or no body at all', async () => {
      await createContact(A, 'multi@example.com');
      const boundary = 'XyZ';
      const multipart = `--${boundary}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--${boundary}--\r\n`;
      const res = await oneClick(
        tokenFor(A, 'multi@example.com'),
        multipart,
        `multipart/form-data; boundary=${boundary}`,
      );
      expect(res.statusCode, res.body).toBe(200);
      expect((await contactRow(A, 'multi@example.com'))?.subscribed).toBe(false);
      const bare = await app.inject({ method: 'POST', url: `/u/${tokenFor(A, 'bare@example.com')}` });
      expect(bare.statusCode, bare.body).toBe(200);
      const json = await oneClick(tokenFor(A, 'json@example.com'), '{"not": "a form"', 'application/json');
      expect(json.statusCode, json.body).toBe(200);
    });

    it('suppresses an address that is no contact, and keeps an existing suppression as it was', async () => {
      await stores.pool.query(
        "INSERT INTO suppressions (tenant_id, email, reason, source, created_at) VALUES ($1, 'kept@example.com', 'hard_bounce', 'bounce', $2)",
        [A, NOW],
      );
      expect((await oneClick(tokenFor(A, 'kept@example.com'))).statusCode).toBe(200);
      const rows = await suppressionRows(A);
      expect(rows).toContainEqual({
        email: 'kept@example.com',
        reason: 'hard_bounce',
        source: 'bounce',
        created_at: new Date(NOW),
      });
      expect(rows).toContainEqual(
        expect.objectContaining({ email: 'bare@example.com', reason: 'unsubscribed' }),
      );
    });

    it('acts only in the token’s tenant', async () => {
      await createContact(B, 'both@example.com');
      await createContact(A, 'both@example.com');
      expect((await oneClick(tokenFor(A, 'both@example.com'))).statusCode).toBe(200);
      expect((await contactRow(A, 'both@example.com'))?.subscribed).toBe(false);
      expect((await contactRow(B, 'both@example.com'))?.subscribed).toBe(true);
      expect(await suppressionRows(B)).toEqual([]);
    });

    it('404 for a forged or altered token: nothing changes', async () => {
      await createContact(A, 'safe@example.com');
      const good = tokenFor(A, 'safe@example.com');
      const forged = createUnsubscribeToken('another-secret-0123456789', {
        tenantId: A,
        email: 'safe@example.com',
        source: SOURCE,
      });
      const truncated = good.slice(0, -2);
      for (const token of [forged, truncated]) {
        expect((await oneClick(token)).statusCode).toBe(404);
      }
      expect((await contactRow(A, 'safe@example.com'))?.subscribed).toBe(true);
      expect((await suppressionRows(A)).map((r) => r.email)).not.toContain('safe@example.com');
    });

    it('413 for a body far larger than a one-click form', async () => {
      const res = await oneClick(tokenFor(A, 'big@example.com'), 'x'.repeat(20_000));
      expect(res.statusCode).toBe(413);
      expect((await suppressionRows(A)).map((r) => r.email)).not.toContain('big@example.com');
    });

    it('the link of listUnsubscribeHeaders is the one these routes answer', async () => {
      await createContact(A, 'header@example.com');
      const headers = listUnsubscribeHeaders({
        tenantId: A,
        email: 'header@example.com',
        source: 'sequence:seq_welcome',
        secret: TRACKING_SECRET,
        publicUrl: 'https://tern.example',
      });
      const link = /^<https:\/\/tern\.example(\/u\/[A-Za-z0-9_-]+)>/.exec(headers['List-Unsubscribe'])?.[1];
      expect(link).toBeDefined();
      expect((await app.inject({ method: 'GET', url: link! })).statusCode).toBe(200);
      const res = await app.inject({
        method: 'POST',
        url: link!,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: headers['List-Unsubscribe-Post'],
      });
      expect(res.statusCode).toBe(200);
      expect((await contactRow(A, 'header@example.com'))?.subscribed).toBe(false);
    });
  });

  describe('logs', () => {
    it('never carry the token or the address of an unsubscribe', async () => {
      const lines: string[] = [];
      const stream = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const logged = await buildApp(stores, clock, { http: { logger: { level: 'info', stream } } });
      try {
        const token = tokenFor(A, 'logged@example.com');
        expect((await logged.inject({ method: 'GET', url: `/u/${token}` })).statusCode).toBe(200);
        expect((await logged.inject({ method: 'POST', url: `/u/${token}` })).statusCode).toBe(200);
        expect((await logged.inject({ method: 'GET', url: '/u/forged' })).statusCode).toBe(404);
        // The logger works: an ordinary request is logged.
        await logged.inject({ method: 'GET', url: '/contacts?logged=1' });
        expect(lines.join('')).toContain('/contacts?logged=1');
        const all = lines.join('');
        expect(all).not.toContain(token);
        expect(all).not.toContain('logged@example.com');
        expect(all).not.toContain('/u/');
      } finally {
        await logged.close();
      }
    });
  });
});
