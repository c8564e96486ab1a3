// Issue 40 item 10: erasing a recipient scrubs every place that names it — a cc's address quoted in
// a whole-message provider diagnostic (Postmark), the stored webhook request body and the
// receiver's echoed answer, a Bcc's address inside an attachment's file name (send content and
// sandbox copy). The real app over a socket, the sender with the sandbox, the projector, Postgres.
import type { DeliveryEvent } from '@tern/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import { openSendingWorld, type SendingWorld, waitForStatus, wallClock } from '../sending-support.js';
import { createKey, jwtFor, project, suffix } from '../support.js';

let world: SendingWorld;
let base: string;
let key: string;
const run = suffix();
const T = `erase-m-${run}`;
const TO = 'ann.m@example.com';
const CC = 'Cc.Person@example.com';
const BCC = 'bcc.person@example.com';

beforeAll(async () => {
  world = await openSendingWorld();
  base = await world.app.listen({ port: 0, host: '127.0.0.1' });
  key = (
    await createKey(world.app, jwtFor(wallClock, T), T, {
      scopes: ['email:send', 'email:read', 'contacts:write'],
    })
  ).key;
}, 120_000);

afterAll(async () => {
  await world?.close();
});

const call = async (path: string, body: unknown) => {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

/** Rows of the tenant, in each table that could hold content, whose text names `address`. */
async function mentions(address: string): Promise<Record<string, number>> {
  // The address as a whole (not `cc.person@…` inside `bcc.person@…`), in lowercased text.
  const a = `(?<![a-z0-9])${address.toLowerCase().replaceAll('.', '\\.')}(?![a-z0-9-])`;
  const q = async (sql: string) => Number((await world.stores.pool.query(sql, [T, a])).rows[0].n);
  return {
    outgoing: await q(
      'SELECT count(*) AS n FROM outgoing_emails WHERE tenant_id = $1 AND lower(message::text) ~ $2',
    ),
    sandbox: await q(
      'SELECT count(*) AS n FROM sandbox_messages WHERE tenant_id = $1 AND lower(message::text) ~ $2',
    ),
    timeline: await q(
      'SELECT count(*) AS n FROM email_events WHERE tenant_id = $1 AND lower(data::text) ~ $2',
    ),
    deliveries: await q(
      `SELECT count(*) AS n FROM webhook_deliveries WHERE tenant_id = $1
          AND (lower(event::text) ~ $2 OR lower(coalesce(request_body, '')) ~ $2)`,
    ),
    answers: await q(
      `SELECT count(*) AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE d.tenant_id = $1 AND lower(coalesce(a.response_excerpt, '')) ~ $2`,
    ),
  };
}
const none = { outgoing: 0, sandbox: 0, timeline: 0, deliveries: 0, answers: 0 };

describe('erasure scrubs every copy naming the address (issue 40 item 10)', () => {
  it('a cc quoted in a whole-message diagnostic and a webhook body and answer; a Bcc in a file name', async () => {
    const sent = await call('/emails/send', {
      from: 'Acme <hello@acme.test>',
      to: TO,
      cc: [CC],
      bcc: [BCC],
      subject: 'Quarterly report',
      text: 'See attached',
      attachments: [
        { filename: `report-for-${BCC}.txt`, content: Buffer.from('numbers').toString('base64') },
      ],
    });
    expect(sent.status).toBe(202);
    const emailId = String(sent.body.id);
    await waitForStatus(world.app, key, emailId, 'DELIVERED', ['email.delivered']);
    await waitFor(
      async () =>
        (
          await world.stores.pool.query(
            'SELECT 1 FROM sandbox_messages WHERE tenant_id = $1 AND email_id = $2',
            [T, emailId],
          )
        ).rowCount === 1,
    );
    // Postmark's bounce of the whole message (no recipient), its Details quoting the cc.
    const diagnostic = `smtp;552 5.2.2 mailbox ${CC.toLowerCase()} is full`;
    const bounce = {
      id: `postmark:whole-${run}`,
      type: 'email.bounced',
      tenantId: T,
      emailId,
      occurredAt: new Date().toISOString(),
      data: { bounceType: 'soft', reason: 'SoftBounce', smtpStatus: '5.2.2', diagnostic },
    } as DeliveryEvent;
    await project(world.stores, [bounce]);
    // The dispatcher's record of that event sent to the tenant's endpoint, and the endpoint's echo.
    const { rows } = await world.stores.pool.query<{ id: string }>(
      `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, email_id, event, request_body,
                                       recipient, status, next_attempt_at, created_at, updated_at)
       VALUES ($1, 'wh_m', $2, 'email.bounced', $3, $4, $5, NULL, 'delivered', now(), now(), now()) RETURNING id`,
      [
        T,
        bounce.id,
        emailId,
        JSON.stringify(bounce),
        JSON.stringify({ type: 'email.bounced', data: bounce.data }),
      ],
    );
    await world.stores.pool.query(
      `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, response_excerpt)
       VALUES ($1, 1, now(), 3, 200, $2)`,
      [rows[0]!.id, `{"ok":true,"echo":${JSON.stringify(diagnostic)}}`],
    );
    const before = await mentions(CC);
    expect(before).toMatchObject({ deliveries: 1, answers: 1 });
    // The queued and sent events name it as a cc, the bounce in its diagnostic.
    expect(before.timeline).toBeGreaterThanOrEqual(2);
    expect((await mentions(BCC)).outgoing).toBe(1);
    expect((await mentions(BCC)).sandbox).toBe(1);

    expect((await call('/contacts/erase', { email: CC })).status).toBe(202);
    expect(await mentions(CC)).toEqual(none);
    expect((await call('/contacts/erase', { email: BCC })).status).toBe(202);
    expect(await mentions(BCC)).toEqual(none);
    // The to's mail stays the to's: its content, sandbox copy and attachment name (scrubbed) remain.
    const { rows: kept } = await world.stores.pool.query<{
      message: { to: unknown; attachments: { filename: string }[] };
    }>('SELECT message FROM outgoing_emails WHERE tenant_id = $1 AND id = $2', [T, emailId]);
    expect(kept[0]?.message.to).toBe(TO);
    expect(kept[0]?.message.attachments[0]?.filename).toBe('report-for-[erased].txt');
  });
});
