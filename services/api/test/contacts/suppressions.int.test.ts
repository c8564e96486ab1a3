import { isSuppressed, suppressedAmong } from '@tern/read-models';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, createKey, eventsOf, jwtFor, NOW, project, testApp } from '../support.js';

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
