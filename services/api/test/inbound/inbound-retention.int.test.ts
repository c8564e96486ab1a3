import type { FastifyInstance } from 'fastify';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InboundWorld, openInboundApi } from '../inbound-support.js';
import { wallClock } from '../sending-support.js';
import {
  buildApp,
  closeAll,
  createClock,
  DAY_MS,
  DEFAULT_RETENTION_DAYS,
  jwtFor,
  type Stores,
  suffix,
} from '../support.js';

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
