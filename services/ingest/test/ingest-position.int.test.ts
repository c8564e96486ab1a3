// Read-your-writes for ingest (SPEC §25, issue 49 item 5), over real sockets: `POST /events` of the
// ingest service answers `position`; the query API's `GET /emails/:id` with `Tern-Consistent-With`
// holds the read until the projector has folded that batch (503 + Retry-After while it is stopped),
// never a 404 for an ingested email. Real Postgres, chDB, the table log, the projector.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSendingWorld, type SendingWorld, wallClock } from '../../api/test/sending-support.js';
import { createKey, jwtFor } from '../../api/test/support.js';
import { listenWithIngest } from './support.js';

const TOKEN = `ingest-${randomBytes(16).toString('hex')}`;
const TENANT = `ingest-pos-${randomBytes(4).toString('hex')}`;
let world: SendingWorld;
let ingest: FastifyInstance;
let apiUrl: string;
let ingestUrl: string;
let readKey: string;

beforeAll(async () => {
  world = await openSendingWorld({ sender: false });
  ({ ingest, apiUrl, ingestUrl } = await listenWithIngest(world, TOKEN));
  readKey = (await createKey(world.app, jwtFor(wallClock, TENANT), TENANT, { scopes: ['email:read'] })).key;
}, 120_000);

afterAll(async () => {
  await ingest?.close();
  await world?.close();
});

const queued = (run: string, i: number) => ({
  id: `ev-${run}-${i}`,
  type: 'email.queued',
  tenantId: TENANT,
  emailId: `em_${run}${i}`,
  occurredAt: new Date().toISOString(),
  data: { toEmail: `user${i}@example.com`, subject: `Hello ${i}` },
});

const ingestBatch = async (events: unknown[]) => {
  const res = await fetch(`${ingestUrl}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ events }),
  });
  expect(res.status).toBe(202);
  return (await res.json()) as { accepted: number; position: string };
};

const read = (id: string, position?: string) =>
  fetch(`${apiUrl}/emails/${id}`, {
    headers: {
      authorization: `Bearer ${readKey}`,
      ...(position ? { 'tern-consistent-with': position } : {}),
    },
  });

describe('POST /events answers a position that GET /emails/:id waits for', () => {
  it('while the projector is stopped: 503 + Retry-After (no header: 404); once it runs: 200', async () => {
    const run = randomBytes(4).toString('hex');
    const events = [queued(run, 1), queued(run, 2), queued(run, 3)];
    await world.projector.stop();
    let restarted = false;
    try {
      const answer = await ingestBatch(events);
      expect(answer).toEqual({ accepted: 3, position: events[2]!.id });
      // Without the token the stale read says 404: the very answer the position exists to prevent.
      expect((await read(events[0]!.emailId)).status).toBe(404);
      const stale = await read(events[0]!.emailId, answer.position);
      expect(stale.status).toBe(503);
      expect(stale.headers.get('retry-after')).toBe('1');
      expect(((await stale.json()) as { code: string }).code).toBe('NOT_CONSISTENT_YET');

      // The read is held while the projector starts, then answers the ingested email.
      const pending = read(events[0]!.emailId, answer.position);
      await world.projector.start();
      restarted = true;
      const fresh = await pending;
      expect(fresh.status).toBe(200);
      expect(await fresh.json()).toMatchObject({ id: events[0]!.emailId, subject: 'Hello 1' });
      for (const e of events) {
        const res = await read(e.emailId, answer.position);
        expect(res.status).toBe(200);
      }
    } finally {
      if (!restarted) await world.projector.start();
    }
  });

  it('a single event answers its own id; a later read with it is 200 at once', async () => {
    const run = randomBytes(4).toString('hex');
    const one = queued(run, 9);
    const res = await fetch(`${ingestUrl}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(one),
    });
    expect(res.status).toBe(202);
    const { position } = (await res.json()) as { position: string };
    expect(position).toBe(one.id);
    const got = await read(one.emailId, position);
    expect(got.status).toBe(200);
  });
});
