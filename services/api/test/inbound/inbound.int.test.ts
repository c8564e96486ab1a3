import type { FastifyInstance } from 'fastify';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InboundWorld, openInboundApi } from '../inbound-support.js';
import { wallClock } from '../sending-support.js';
import {
  buildApp,
  closeAll,
  createClock,
  createKey,
  DAY_MS,
  DEFAULT_RETENTION_DAYS,
  jwtFor,
  type Stores,
  suffix,
} from '../support.js';

describe('receiving through /compat/resend', () => {
  const TENANT = `resend-in-${suffix()}`;
  let stores: Stores;
  let app: FastifyInstance;
  let world: InboundWorld;
  let origin: string;
  let key: string;
  let resend: Resend;
  let to: string;
  const ids: string[] = [];
  const pdf = Buffer.concat([
    Buffer.from('%PDF-1.4\n'),
    Buffer.from([0, 200, 255, 1]),
    Buffer.alloc(3000, 9),
  ]);

  beforeAll(async () => {
    ({ stores, app, origin, key, world } = await openInboundApi(TENANT, wallClock));
    resend = new Resend(key, { baseUrl: `${origin}/compat/resend` });
    to = await world.address(TENANT);
    for (let i = 0; i < 3; i++)
      ids.push(
        await world.deliver({
          from: `Ann <ann${i}@sender.test>`,
          to,
          replyTo: 'desk@sender.test',
          subject: `Question ${i}`,
          text: `Plain ${i}`,
          html: `<p>Rich ${i}</p>`,
          messageId: `<q${i}-${TENANT}@sender.test>`,
          ...(i === 0
            ? {
                attachments: [
                  { filename: 'scan.pdf', content: pdf, contentType: 'application/pdf' },
                  { filename: 'notes.txt', content: 'line one\n', contentType: 'text/plain' },
                ],
              }
            : {}),
        }),
      );
  }, 120_000);

  afterAll(() => closeAll(world, app, stores));

  /** As Resend's links are fetched (by `receiving.forward` too): a plain GET, no key. */
  const download = (url: string) => fetch(url);

  describe('resend.emails.receiving', () => {
    it('list: newest first in Resend’s shape, paged with limit and after', async () => {
      const first = await resend.emails.receiving.list({ limit: 2 });
      expect(first.error).toBeNull();
      expect(first.data).toMatchObject({ object: 'list', has_more: true });
      expect(first.data!.data.map((m) => m.id)).toEqual([ids[2], ids[1]]);
      expect(first.data!.data[0]).toMatchObject({
        from: 'ann2@sender.test',
        to: [to],
        subject: 'Question 2',
        reply_to: ['desk@sender.test'],
        message_id: `<q2-${TENANT}@sender.test>`,
      });
      expect(Date.parse(first.data!.data[0]!.created_at)).toBeGreaterThan(Date.now() - 120_000);
      const second = await resend.emails.receiving.list({ limit: 2, after: ids[1]! });
      expect(second.data).toMatchObject({ object: 'list', has_more: false });
      expect(second.data!.data.map((m) => m.id)).toEqual([ids[0]]);
    });

    it('get: text, html, headers, attachments; raw.download_url (signed, no key) serves the MIME message', async () => {
      const { data, error } = await resend.emails.receiving.get(ids[0]!);
      expect(error).toBeNull();
      expect(data).toMatchObject({
        object: 'email',
        id: ids[0],
        from: 'ann0@sender.test',
        subject: 'Question 0',
        text: 'Plain 0',
        html: '<p>Rich 0</p>',
        message_id: `<q0-${TENANT}@sender.test>`,
      });
      expect(data!.headers?.subject).toBe('Question 0');
      expect(data!.attachments).toEqual([
        expect.objectContaining({ filename: 'scan.pdf', content_type: 'application/pdf', size: pdf.length }),
        expect.objectContaining({ filename: 'notes.txt', content_type: 'text/plain' }),
      ]);
      expect(data!.raw!.download_url).toMatch(new RegExp(`^${origin}/compat/resend/downloads/`));
      expect(Date.parse(data!.raw!.expires_at) - Date.now()).toBeGreaterThan(3_500_000);
      const raw = await download(data!.raw!.download_url);
      expect(raw.status).toBe(200);
      expect(raw.headers.get('content-type')).toBe('message/rfc822');
      expect(await raw.text()).toContain('Subject: Question 0');
      // The link names one message and part: altered (another id, or a forged signature) it is refused.
      const token = data!.raw!.download_url.split('/downloads/')[1]!;
      const [payload, sig] = token.split('.');
      const other = Buffer.from(JSON.stringify([ids[1], 'raw', Math.floor(Date.now() / 1000) + 60])).toString(
        'base64url',
      );
      for (const forged of [`${other}.${sig}`, `${payload}.${sig!.slice(0, -2)}AA`, payload!]) {
        const refused = await download(`${origin}/compat/resend/downloads/${forged}`);
        expect(refused.status, forged).toBe(404);
        expect(await refused.json()).toMatchObject({ name: 'not_found' });
      }
    });

    it('attachments.list and .get: metadata with a download_url that serves the exact bytes', async () => {
      const listed = await resend.emails.receiving.attachments.list({ emailId: ids[0]! });
      expect(listed.error).toBeNull();
      expect(listed.data).toMatchObject({ object: 'list', has_more: false });
      expect(listed.data!.data.map((a) => a.filename)).toEqual(['scan.pdf', 'notes.txt']);
      const paged = await resend.emails.receiving.attachments.list({ emailId: ids[0]!, limit: 1 });
      expect(paged.data).toMatchObject({ has_more: true, data: [{ filename: 'scan.pdf' }] });
      const rest = await resend.emails.receiving.attachments.list({
        emailId: ids[0]!,
        limit: 1,
        after: paged.data!.data[0]!.id,
      });
      expect(rest.data).toMatchObject({ has_more: false, data: [{ filename: 'notes.txt' }] });

      const got = await resend.emails.receiving.attachments.get({
        emailId: ids[0]!,
        id: listed.data!.data[0]!.id,
      });
      expect(got.error).toBeNull();
      expect(got.data).toMatchObject({
        object: 'attachment',
        filename: 'scan.pdf',
        content_type: 'application/pdf',
        content_disposition: 'attachment',
      });
      const bytes = await download(got.data!.download_url);
      expect(bytes.headers.get('content-type')).toBe('application/pdf');
      expect(Buffer.from(await bytes.arrayBuffer()).equals(pdf)).toBe(true);
    });

    it('Resend’s errors: unknown message or attachment → not_found; no inbound:read → restricted_api_key; before → validation_error', async () => {
      expect((await resend.emails.receiving.get('inb_00000000000000000000000000')).error).toMatchObject({
        name: 'not_found',
        statusCode: 404,
      });
      expect(
        (await resend.emails.receiving.attachments.get({ emailId: ids[0]!, id: 'att_7' })).error,
      ).toMatchObject({ name: 'not_found' });
      expect((await resend.emails.receiving.list({ before: ids[0]! })).error).toMatchObject({
        name: 'validation_error',
      });
      expect((await resend.emails.receiving.list({ limit: 101 })).error).toMatchObject({
        name: 'validation_error',
      });
      const other = (await createKey(app, jwtFor(wallClock, TENANT), TENANT, { scopes: ['email:read'] })).key;
      const denied = new Resend(other, { baseUrl: `${origin}/compat/resend` });
      expect((await denied.emails.receiving.list()).error).toMatchObject({ name: 'restricted_api_key' });
      expect((await denied.emails.receiving.get(ids[0]!)).error).toMatchObject({
        name: 'restricted_api_key',
      });
    });
  });
});

describe('inbound retention', () => {
  const TENANT = `inb-ret-${suffix()}`;
  let stores: Stores;
  let app: FastifyInstance;
  let world: InboundWorld;
  let key: string;
  let origin: string;
  const ids: string[] = [];

  beforeAll(async () => {
    ({ stores, app, origin, key, world } = await openInboundApi(TENANT, wallClock));
    const to = await world.address(TENANT);
    for (let i = 0; i < 3; i++)
      ids.push(
        await world.deliver({
          from: `s${i}@sender.test`,
          to,
          subject: `Old ${i}`,
          text: `Body ${i}`,
          attachments: [{ filename: 'a.txt', content: `attachment ${i}\n`, contentType: 'text/plain' }],
        }),
      );
  }, 120_000);

  afterAll(() => closeAll(world, app, stores));

  const get = (a: FastifyInstance, url: string) =>
    a.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
  const listed = async (a: FastifyInstance) => {
    const res = await get(a, '/inbound?limit=100');
    expect(res.statusCode).toBe(200);
    return (res.json() as { data: { id: string }[] }).data.map((m) => m.id);
  };
  /** Every read of one message: the message, its raw bytes, its attachment. */
  const statuses = async (a: FastifyInstance, id: string) => [
    (await get(a, `/inbound/${id}`)).statusCode,
    (await get(a, `/inbound/${id}/raw`)).statusCode,
    (await get(a, `/inbound/${id}/attachments/att_0`)).statusCode,
  ];
  const backdate = (id: string, days: number) =>
    stores.pool.query(
      `UPDATE inbound_messages SET received_at = now() - make_interval(days => $2) WHERE id = $1`,
      [id, days],
    );
  const stillStored = async (id: string) =>
    (await stores.pool.query('SELECT 1 FROM inbound_messages WHERE id = $1', [id])).rowCount === 1;

  describe('retention on /inbound reads (SPEC §9, §24)', () => {
    it('a message received before the default retention reads as gone (404, not listed) before the job runs', async () => {
      expect(await statuses(app, ids[0]!)).toEqual([200, 200, 200]);
      // A signed download link handed out while the message was readable.
      const resend = new Resend(key, { baseUrl: `${origin}/compat/resend` });
      const got = await resend.emails.receiving.get(ids[0]!);
      expect(got.error).toBeNull();
      const link = (got.data as unknown as { raw: { download_url: string } }).raw.download_url;
      expect((await fetch(link)).status).toBe(200);

      await backdate(ids[0]!, DEFAULT_RETENTION_DAYS + 2);
      expect(await stillStored(ids[0]!)).toBe(true);
      expect(await statuses(app, ids[0]!)).toEqual([404, 404, 404]);
      expect(await listed(app)).toEqual([ids[2], ids[1]]);
      expect((await fetch(link)).status).toBe(404);
      expect((await resend.emails.receiving.get(ids[0]!)).error).toMatchObject({ name: 'not_found' });
      // Just inside the retention: still there.
      await backdate(ids[1]!, DEFAULT_RETENTION_DAYS - 2);
      expect(await statuses(app, ids[1]!)).toEqual([200, 200, 200]);
    });

    it('a shorter retention of the tenant hides older mail at once', async () => {
      await backdate(ids[2]!, 3);
      expect(await statuses(app, ids[2]!)).toEqual([200, 200, 200]);
      const put = await app.inject({
        method: 'PUT',
        url: `/tenants/${TENANT}/settings`,
        headers: { authorization: `Bearer ${jwtFor(wallClock, TENANT)}` },
        payload: { retentionDays: 1 },
      });
      expect(put.statusCode).toBe(200);
      expect(await statuses(app, ids[2]!)).toEqual([404, 404, 404]);
      expect(await listed(app)).toEqual([]);
      const back = await app.inject({
        method: 'PUT',
        url: `/tenants/${TENANT}/settings`,
        headers: { authorization: `Bearer ${jwtFor(wallClock, TENANT)}` },
        payload: { retentionDays: null },
      });
      expect(back.statusCode).toBe(200);
      expect(await listed(app)).toEqual([ids[2], ids[1]]);
    });

    it('moving the clock past the retention hides mail received now', async () => {
      const later = createClock(new Date(Date.now() + (DEFAULT_RETENTION_DAYS + 2) * DAY_MS).toISOString());
      const future = await buildApp(stores, later);
      try {
        // The key was made under the wall clock and does not expire; only the reads' "now" moved.
        expect(await listed(future)).toEqual([]);
        expect(await statuses(future, ids[2]!)).toEqual([404, 404, 404]);
        expect(await stillStored(ids[2]!)).toBe(true);
      } finally {
        await future.close();
      }
    });
  });
});
