import { Writable } from 'node:stream';
import { createUnsubscribeToken, listUnsubscribeHeaders } from '@tern/domain';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  buildApp,
  closeAll,
  jwtFor,
  NOW,
  openApp,
  type Stores,
  TRACKING_SECRET,
  testTenants,
} from '../support.js';

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
