// `client.inbound.*` (SPEC §24) against the real API on a loopback port, with mail put in through
// the real MX listener (nodemailer's SMTP client → smtp-server → sealed store and log).
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InboundWorld, openInboundWorld } from '../../../services/api/test/inbound-support.js';
import { wallClock } from '../../../services/api/test/sending-support.js';
import { createKey, jwtFor, type Stores } from '../../../services/api/test/support.js';
import { type InboundSummary, init, TernApiError } from '../src/index.js';
import { closeLoopbackApi, openLoopbackApi } from './support.js';

const TENANT = `sdk-inbound-${Date.now()}`;
const OTHER = `${TENANT}-other`;
let stores: Stores;
let app: FastifyInstance;
let world: InboundWorld;
let baseUrl: string;
let key: string;
let to: string;
const ids: string[] = [];
const pdf = Buffer.concat([
  Buffer.from('%PDF-1.4\n'),
  Buffer.from([0, 1, 2, 253, 254, 255]),
  Buffer.alloc(5000, 7),
]);

beforeAll(async () => {
  ({ stores, app, baseUrl } = await openLoopbackApi(wallClock));
  key = (await createKey(app, jwtFor(wallClock, TENANT), TENANT, { scopes: ['inbound:read'] })).key;
  world = await openInboundWorld(stores.pool);
  to = await world.address(TENANT);
  const other = await world.address(OTHER);
  for (let i = 0; i < 3; i++)
    ids.push(
      await world.deliver({
        from: `Sender ${i} <s${i}@sender.test>`,
        to,
        subject: `Hello ${i}`,
        text: `Body ${i}`,
        html: `<p>Body <b>${i}</b></p>`,
        ...(i === 2
          ? { attachments: [{ filename: 'scan.pdf', content: pdf, contentType: 'application/pdf' }] }
          : {}),
      }),
    );
  await world.deliver({ from: 's0@sender.test', to: other, subject: 'Not yours', text: 'x' });
}, 120_000);

afterAll(async () => {
  await world?.close();
  await closeLoopbackApi({ stores, app });
});

describe('client.inbound', () => {
  it('list pages newest first by cursor, filters by from/to/since; iterate walks every page', async () => {
    const tern = init({ apiKey: key, baseUrl });
    const first = await tern.inbound.list({ limit: 2 });
    expect(first.data.map((m) => m.id)).toEqual([ids[2], ids[1]]);
    expect(first.meta.nextCursor).toEqual(expect.any(String));
    const second = await tern.inbound.list({ limit: 2, cursor: first.meta.nextCursor! });
    expect(second.data.map((m) => m.id)).toEqual([ids[0]]);
    expect(second.meta.nextCursor).toBeNull();
    expect(first.data[0]).toMatchObject({ from: 's2@sender.test', to: [to], subject: 'Hello 2' });
    expect(Object.keys(first.data[0]!.auth).sort()).toEqual(['arc', 'dkim', 'dmarc', 'spf']);

    expect((await tern.inbound.list({ from: 'S1@sender.test' })).data.map((m) => m.id)).toEqual([ids[1]]);
    expect((await tern.inbound.list({ to })).data).toHaveLength(3);
    expect((await tern.inbound.list({ to: 'nobody@else.test' })).data).toEqual([]);
    expect((await tern.inbound.list({ since: new Date(Date.now() + 60_000) })).data).toEqual([]);

    const all: InboundSummary[] = [];
    for await (const m of tern.inbound.iterate({ limit: 1 })) all.push(m);
    expect(all.map((m) => m.id)).toEqual([...ids].reverse());
  });

  it('get answers text, html, headers and attachment metadata; raw and attachment answer the exact bytes', async () => {
    const tern = init({ apiKey: key, baseUrl });
    const m = await tern.inbound.get(ids[2]!);
    expect(m).toMatchObject({ id: ids[2], subject: 'Hello 2', text: 'Body 2', html: '<p>Body <b>2</b></p>' });
    expect(m.headers.find((h) => h.name.toLowerCase() === 'subject')?.value).toBe('Hello 2');
    expect(m.attachments).toEqual([
      expect.objectContaining({ filename: 'scan.pdf', contentType: 'application/pdf', size: pdf.length }),
    ]);
    const bytes = await tern.inbound.attachment(ids[2]!, m.attachments[0]!.id);
    expect(Buffer.from(bytes).equals(pdf)).toBe(true);
    const raw = Buffer.from(await tern.inbound.raw(ids[2]!)).toString();
    expect(raw).toContain('Subject: Hello 2');
    expect(raw).toContain(pdf.toString('base64').slice(0, 60));
  });

  it('another tenant’s message, an unknown attachment or a bad cursor are TernApiErrors; no scope → 403', async () => {
    const tern = init({ apiKey: key, baseUrl, maxRetries: 0 });
    const [theirs] = (
      await stores.pool.query<{ id: string }>('SELECT id FROM inbound_messages WHERE tenant_id = $1', [OTHER])
    ).rows;
    await expect(tern.inbound.get(theirs!.id)).rejects.toMatchObject({ status: 404 });
    await expect(tern.inbound.raw(theirs!.id)).rejects.toMatchObject({ status: 404 });
    await expect(tern.inbound.attachment(ids[2]!, 'att_9')).rejects.toMatchObject({ status: 404 });
    await expect(tern.inbound.list({ cursor: 'nope' })).rejects.toMatchObject({
      status: 400,
      code: 'INVALID_CURSOR',
    });
    await expect(tern.inbound.list({ limit: 1000 })).rejects.toMatchObject({ status: 400 });
    const other = (await createKey(app, jwtFor(wallClock, TENANT), TENANT, { scopes: ['email:read'] })).key;
    const denied = init({ apiKey: other, baseUrl, maxRetries: 0 });
    await expect(denied.inbound.list()).rejects.toBeInstanceOf(TernApiError);
    await expect(denied.inbound.get(ids[0]!)).rejects.toMatchObject({ status: 403 });
  });
});
