// The live consumer's batch → deliveries in one statement (issue 45, `enqueueLiveDeliveries`): the
// endpoints matched in SQL as `deliveriesFor` matches them in code, on a real Postgres.
import type { InboundEvent, LogEvent } from '@tern/contracts';
import { createSecretBox, enqueueLiveDeliveries } from '@tern/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveriesFor } from '../src/deliveries.js';
import { createEndpoint, emailEvents, openDatabase, queued, suffix } from './support.js';

const box = createSecretBox('dispatcher-enqueue-test-key');
let db: Awaited<ReturnType<typeof openDatabase>>;

beforeAll(async () => {
  db = await openDatabase();
});
afterAll(async () => {
  await db?.close();
});

const inbound = (tenantId: string, webhooks?: string[]): InboundEvent => ({
  id: `inb-ev-${suffix()}`,
  type: 'email.received',
  tenantId,
  inboundId: `inb_${suffix()}${suffix()}${suffix()}00`.slice(0, 30),
  occurredAt: new Date().toISOString(),
  data: {
    from: 'someone@example.com',
    to: ['in@acme.test'],
    subject: 'Hi',
    messageId: null,
    size: 10,
    attachments: 0,
    auth: { spf: 'none', dkim: 'none', dmarc: 'none', arc: 'none' },
    inReplyTo: null,
    ...(webhooks === undefined ? {} : { routeId: 'route_1', webhooks }),
  },
});

describe('enqueueLiveDeliveries', () => {
  it('one delivery per event and matching enabled endpoint, in event order; routed inbound to its webhooks only; a re-read makes none', async () => {
    const tenant = `enq-${suffix()}`;
    const other = `enq-other-${suffix()}`;
    const all = await createEndpoint(db.pool, box, tenant, 'http://127.0.0.1:1/all');
    const delivered = await createEndpoint(db.pool, box, tenant, 'http://127.0.0.1:1/d', ['email.delivered']);
    const received = await createEndpoint(db.pool, box, tenant, 'http://127.0.0.1:1/r', ['email.received']);
    const disabled = await createEndpoint(db.pool, box, tenant, 'http://127.0.0.1:1/off');
    await db.pool.query('UPDATE webhook_endpoints SET enabled = false WHERE id = $1', [disabled.id]);
    await createEndpoint(db.pool, box, other, 'http://127.0.0.1:1/other', ['email.sent']);
    const events: LogEvent[] = [
      ...emailEvents(tenant, 'em_enq1', [queued(), { type: 'email.delivered' }]),
      inbound(tenant),
      inbound(tenant, [delivered.id]),
      inbound(tenant, []),
      ...emailEvents(other, 'em_enq2', [{ type: 'email.delivered' }]),
    ];
    const expected = (await deliveriesFor(db.pool, events)).map((d) => `${d.event.id}>${d.endpointId}`);
    expect(await enqueueLiveDeliveries(db.pool, events, new Date())).toBe(expected.length);
    const { rows } = await db.pool.query<{ event_id: string; endpoint_id: string; event_type: string }>(
      `SELECT event_id, endpoint_id, event_type FROM webhook_deliveries
        WHERE tenant_id = ANY($1::text[]) ORDER BY id`,
      [[tenant, other]],
    );
    const made = rows.map((r) => `${r.event_id}>${r.endpoint_id}`);
    expect([...made].sort()).toEqual([...expected].sort());
    // queued → all; delivered → all + delivered; plain inbound → all + received; routed → its
    // webhook only (whatever its filter); routed to none → nobody; the other tenant's filter → none.
    const by = (i: number) =>
      made.filter((m) => m.startsWith(`${events[i]!.id}>`)).map((m) => m.split('>')[1]);
    expect(by(0)).toEqual([all.id]);
    expect(by(1)).toEqual([all.id, delivered.id].sort());
    expect(by(2)).toEqual([all.id, received.id].sort());
    expect(by(3)).toEqual([delivered.id]);
    expect(by(4)).toEqual([]);
    expect(by(5)).toEqual([]);
    // In event order (ids ascending), then endpoint id.
    expect(made).toEqual(events.flatMap((e) => made.filter((m) => m.startsWith(`${e.id}>`)).sort()));
    expect(await enqueueLiveDeliveries(db.pool, events, new Date())).toBe(0);
  });
});
