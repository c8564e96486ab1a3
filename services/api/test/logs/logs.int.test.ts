import { beforeAll, describe, expect, it } from 'vitest';
import { eventsFor, expectedLog, type GeneratedEmail, generateEmails } from '../dataset.js';
import {
  bearer,
  buildApp,
  createClock,
  createKey,
  DEFAULT_RETENTION_DAYS,
  jwtFor,
  NOW,
  project,
  testApp,
} from '../support.js';

const file = testApp('logs');
const { clock, A, B } = file;

let emailsA: GeneratedEmail[];
let emailsB: GeneratedEmail[];
let tokenA: string;
let readKeyA: string;
let readKeyB: string;
let sendOnlyKeyA: string;

const logs = (query: string, headers: Record<string, string> = { 'x-api-key': readKeyA }) =>
  file.app.inject({ method: 'GET', url: `/emails/logs${query}`, headers });

/** Every page of the log, concatenated. */
async function allPages(limit: number, headers?: Record<string, string>) {
  const entries = [];
  for (let page = 1; ; page++) {
    const res = await logs(`?page=${page}&limit=${limit}`, headers);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    entries.push(...body.data);
    if (page >= body.meta.totalPages) return { entries, meta: body.meta };
  }
}

beforeAll(async () => {
  tokenA = jwtFor(clock, A, 'admin');
  const common = { now: NOW, spanDays: 104, templates: ['t1', 't2'] };
  emailsA = generateEmails({ ...common, tenantId: A, count: 230, seed: 11 });
  emailsB = generateEmails({ ...common, tenantId: B, count: 60, seed: 12 });
  await project(file.stores, eventsFor([...emailsA, ...emailsB], 13));
  readKeyA = (await createKey(file.app, tokenA, A, { scopes: ['email:read'] })).key;
  sendOnlyKeyA = (await createKey(file.app, tokenA, A, { scopes: ['email:send', 'templates:read'] })).key;
  readKeyB = (await createKey(file.app, jwtFor(clock, B), B, { scopes: ['email:read'] })).key;
});

describe('GET /emails/logs', () => {
  describe('200', () => {
    it('lists every visible entry once, newest first, id desc (byte order) on equal createdAt', async () => {
      const expected = expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS);
      const { entries, meta } = await allPages(17);
      expect(entries).toEqual(expected);
      expect(meta).toEqual({
        page: meta.page,
        limit: 17,
        total: expected.length,
        totalPages: Math.ceil(expected.length / 17),
        nextCursor: null,
      });
      const ties = entries
        .filter((e: { id: string }) => ['Tie-B', 'tie-a', 'tie-C'].includes(e.id))
        .map((e: { id: string }) => e.id);
      expect(ties).toEqual(['tie-a', 'tie-C', 'Tie-B']);
    });

    it('defaults to page 1 and limit 20, with meta', async () => {
      const res = await logs('');
      expect(res.statusCode).toBe(200);
      const expected = expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS);
      expect(res.json()).toEqual({
        data: expected.slice(0, 20),
        meta: {
          page: 1,
          limit: 20,
          total: expected.length,
          totalPages: Math.ceil(expected.length / 20),
          nextCursor: expect.any(String),
        },
      });
    });

    it('pages are disjoint slices: page 3 of limit 7 is entries 14..20', async () => {
      const expected = expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS);
      const res = await logs('?page=3&limit=7');
      expect(res.json().data).toEqual(expected.slice(14, 21));
    });

    it('a page past the end has data [] and the true meta', async () => {
      const total = expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS).length;
      for (const page of [Math.ceil(total / 100) + 1, 99_999_999, 9_007_199_254_740_991]) {
        const res = await logs(`?page=${page}&limit=100`);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toEqual({
          data: [],
          meta: { page, limit: 100, total, totalPages: Math.ceil(total / 100), nextCursor: null },
        });
      }
    });

    it('carries provider and messageId only once sent, createdAt as ISO, tags as an array', async () => {
      const data = (await logs('?limit=100')).json().data as Record<string, unknown>[];
      for (const entry of data) {
        expect(Object.keys(entry).sort()).toEqual(
          [
            'clicked',
            'complained',
            'createdAt',
            'id',
            'messageId',
            'opened',
            'provider',
            'status',
            'subject',
            'tags',
            'toEmail',
          ].sort(),
        );
        for (const flag of ['opened', 'clicked', 'complained']) expect(typeof entry[flag]).toBe('boolean');
        expect(entry.createdAt).toBe(new Date(entry.createdAt as string).toISOString());
        expect(Array.isArray(entry.tags)).toBe(true);
        const sent = ['SENT', 'DELAYED', 'DELIVERED', 'BOUNCED'].includes(entry.status as string);
        expect(entry.provider === null).toBe(!sent);
        expect(entry.messageId === null).toBe(!sent);
      }
    });

    it('hides entries before the retention cut-off: the cut-off instant is visible, 1 ms before is not', async () => {
      const ids = (await allPages(100)).entries.map((e: { id: string }) => e.id);
      expect(ids).toContain('edge-90-start');
      expect(ids).not.toContain('edge-90-prev');
      // A tenant override moves the cut-off at once.
      const put = await file.app.inject({
        method: 'PUT',
        url: `/tenants/${A}/settings`,
        headers: bearer(tokenA),
        payload: { retentionDays: 10 },
      });
      expect(put.statusCode).toBe(200);
      try {
        const { entries, meta } = await allPages(100);
        expect(entries).toEqual(expectedLog(emailsA, NOW, 10));
        expect(meta.total).toBe(expectedLog(emailsA, NOW, 10).length);
        expect(entries.map((e: { id: string }) => e.id)).toContain('edge-10-start');
        expect(entries.map((e: { id: string }) => e.id)).not.toContain('edge-10-prev');
      } finally {
        await file.app.inject({
          method: 'PUT',
          url: `/tenants/${A}/settings`,
          headers: bearer(tokenA),
          payload: { retentionDays: null },
        });
      }
    });

    it('moves the cut-off with the clock (day-granular)', async () => {
      const clockLater = createClock('2026-06-16T00:00:00.000Z');
      const later = await buildApp(file.stores, clockLater);
      try {
        const res = await later.inject({
          url: '/emails/logs?limit=100&page=1',
          headers: { 'x-api-key': readKeyA },
        });
        expect(res.json().meta.total).toBe(expectedLog(emailsA, '2026-06-16T00:00:00.000Z', 90).length);
        expect(res.json().meta.total).toBeLessThan(expectedLog(emailsA, NOW, 90).length);
      } finally {
        await later.close();
      }
    });

    it('accepts the key in Authorization: Bearer, and a tenant JWT of any role', async () => {
      const expected = expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS).slice(0, 5);
      for (const headers of [bearer(readKeyA), bearer(tokenA), bearer(jwtFor(clock, A, 'member'))]) {
        const res = await logs('?limit=5', headers);
        expect(res.statusCode).toBe(200);
        expect(res.json().data).toEqual(expected);
      }
    });

    it('shows only the credential’s tenant, whatever the credential', async () => {
      const bIds = new Set(expectedLog(emailsB, NOW, DEFAULT_RETENTION_DAYS).map((e) => e.id));
      const forB = await allPages(100, { 'x-api-key': readKeyB });
      expect(forB.entries).toEqual(expectedLog(emailsB, NOW, DEFAULT_RETENTION_DAYS));
      for (const headers of [{ 'x-api-key': readKeyA }, bearer(tokenA)]) {
        const forA = await allPages(100, headers);
        // Ids overlap between the tenants (same generator); the entries must be A's own.
        expect(forA.entries).toEqual(expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS));
        expect(forA.entries.some((e: { id: string }) => bIds.has(e.id))).toBe(true);
      }
    });

    it('carries X-Tern-As-Of when something was projected, and not before', async () => {
      const { rows } = await file.stores.pool.query<{ at: Date }>(
        "SELECT last_batch_at AS at FROM projection_status WHERE name = 'projector'",
      );
      const withStatus = await logs('?limit=1');
      expect(withStatus.headers['x-tern-as-of']).toBe(rows[0]!.at.toISOString());
      const client = await file.stores.pool.connect();
      try {
        await client.query('BEGIN');
        await client.query("DELETE FROM projection_status WHERE name = 'projector'");
        // The app reads through its own pool: commit the delete, then put the row back.
        await client.query('COMMIT');
        const without = await logs('?limit=1');
        expect(without.statusCode).toBe(200);
        expect(without.headers['x-tern-as-of']).toBeUndefined();
        expect(Object.keys(without.json())).toEqual(['data', 'meta']);
      } finally {
        await client.query(
          "INSERT INTO projection_status (name, last_batch_at) VALUES ('projector', $1) ON CONFLICT (name) DO UPDATE SET last_batch_at = EXCLUDED.last_batch_at",
          [rows[0]!.at],
        );
        client.release();
      }
    });
  });

  describe('400', () => {
    it.each([
      ['page=0', 'page'],
      ['page=-1', 'page'],
      ['page=1.5', 'page'],
      ['page=abc', 'page'],
      ['page=', 'page'],
      ['page=1&page=2', 'page'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=2.5', 'limit'],
      ['limit=ten', 'limit'],
      ['limit=', 'limit'],
      ['limit=1e1', 'limit'],
    ])('%s names %s', async (query, field) => {
      const res = await logs(`?${query}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(res.json().message).toContain(field);
    });
  });

  describe('401', () => {
    it('without a credential', async () => {
      const res = await file.app.inject({ method: 'GET', url: '/emails/logs' });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    });

    it('with an unknown key of valid form, or a malformed one, with the same message for both keys', async () => {
      const unknown = await logs('', { 'x-api-key': `tern_${'A'.repeat(40)}` });
      const garbage = await logs('', { 'x-api-key': 'tern_short' });
      expect(unknown.statusCode).toBe(401);
      expect(garbage.statusCode).toBe(401);
      expect(unknown.json().message).toBe(garbage.json().message);
    });

    it('comes before validation: a bad query without a credential is 401', async () => {
      expect((await file.app.inject({ method: 'GET', url: '/emails/logs?page=0' })).statusCode).toBe(401);
    });
  });

  describe('403', () => {
    it('a key without email:read gets the exact message and missingScope', async () => {
      const res = await logs('', { 'x-api-key': sendOnlyKeyA });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({
        statusCode: 403,
        error: 'Forbidden',
        message: 'Missing required API key scope',
        code: 'MISSING_SCOPE',
        missingScope: 'email:read',
      });
    });
  });
});
