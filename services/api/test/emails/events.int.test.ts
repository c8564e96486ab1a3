import type { AddressInfo } from 'node:net';
import { eventStream } from '@tern/read-models';
import { EventSource } from 'eventsource';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import {
  bearer,
  buildApp,
  createClock,
  createKey,
  createProject,
  eventsOf,
  jwtFor,
  openStores,
  project,
  type Stores,
  suffix,
} from '../support.js';

/** `GET /events` and `GET /events/stream` (SPEC §25) over a real socket. */
describe('the event stream routes', () => {
  let stores: Stores;
  let app: FastifyInstance;
  let base: string;
  const clock = createClock();
  const tenant = `evt-${suffix()}`;
  let key: string;
  let projectKey: string;
  let noScope: string;

  const queued = (emailId: string, extra: Record<string, unknown> = {}) =>
    eventsOf(tenant, emailId, [
      {
        type: 'email.queued',
        occurredAt: '2026-06-15T10:00:00.000Z',
        data: { toEmail: `${emailId}@example.com`, subject: `S ${emailId}`, ...extra },
      },
      {
        type: 'email.sent',
        occurredAt: '2026-06-15T10:00:01.000Z',
        data: { provider: 'sandbox', messageId: `<${emailId}@x>` },
      },
      { type: 'email.delivered', occurredAt: '2026-06-15T10:00:02.000Z' },
    ]);
  const get = (path: string, k = key, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { headers: { ...bearer(k), ...headers } });

  beforeAll(async () => {
    stores = await openStores();
    app = await buildApp(stores, clock, {
      limits: { eventStream: { tickMs: 20, pollMs: 100, heartbeatMs: 200 } },
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const jwt = jwtFor(clock, tenant);
    const projectId = await createProject(app, jwt, 'P');
    key = (await createKey(app, jwt, tenant, { scopes: ['events:read'] })).key;
    noScope = (await createKey(app, jwt, tenant, { scopes: ['email:read'] })).key;
    projectKey = (await createKey(app, jwt, tenant, { scopes: ['events:read'], projectId })).key;
    await project(stores, [
      ...queued('em-a', { tags: ['receipt'] }),
      ...queued('em-b', { projectId }),
      ...queued('em-c'),
    ]);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await stores?.close();
  });

  it('lists every event once in order, paging with any limit, as its webhook body plus cursor', async () => {
    const all = (await (await get('/events?limit=1000')).json()) as {
      data: { id: string; cursor: string; type: string; data: Record<string, unknown> }[];
      next: string;
      hasMore: boolean;
    };
    expect(all.data).toHaveLength(9);
    expect(all.hasMore).toBe(false);
    const cursors = all.data.map((e) => BigInt(e.cursor));
    expect(cursors).toEqual([...cursors].sort((a, b) => (a < b ? -1 : 1)));
    const delivered = all.data.find((e) => e.data.emailId === 'em-a' && e.type === 'email.delivered');
    expect(delivered?.data).toMatchObject({
      emailId: 'em-a',
      tenantId: tenant,
      to: 'em-a@example.com',
      subject: 'S em-a',
      tags: ['receipt'],
      status: 'DELIVERED',
    });
    for (const limit of [1, 2, 4]) {
      const seen: string[] = [];
      let after = '0';
      for (let i = 0; i < 20; i++) {
        const page = (await (await get(`/events?after=${after}&limit=${limit}`)).json()) as typeof all;
        seen.push(...page.data.map((e) => e.id));
        after = page.next;
        if (!page.hasMore) break;
      }
      expect(seen).toEqual(all.data.map((e) => e.id));
    }
  });

  it('order=newest reads the same events backwards, paging with before = next', async () => {
    const all = (await (await get('/events?limit=1000')).json()) as { data: { id: string }[] };
    const reversed = all.data.map((e) => e.id).reverse();
    for (const limit of [1, 4, 1000]) {
      const seen: string[] = [];
      let before: string | undefined;
      for (let i = 0; i < 20; i++) {
        const page = (await (
          await get(`/events?order=newest&limit=${limit}${before ? `&before=${before}` : ''}`)
        ).json()) as { data: { id: string; cursor: string }[]; next: string; hasMore: boolean };
        seen.push(...page.data.map((e) => e.id));
        if (page.data.length > 0) expect(page.next).toBe(page.data.at(-1)?.cursor);
        before = page.next;
        if (!page.hasMore) break;
      }
      expect(seen, `limit ${limit}`).toEqual(reversed);
    }
    const sent = (await (await get('/events?order=newest&types=email.sent&limit=2')).json()) as {
      data: { type: string; data: { emailId: string } }[];
    };
    expect(sent.data.map((e) => [e.type, e.data.emailId])).toEqual([
      ['email.sent', 'em-c'],
      ['email.sent', 'em-b'],
    ]);
  });

  it('filters by types, emailId, tag and project; a project key sees its project only', async () => {
    const ids = async (path: string, k = key) =>
      (
        (await (await get(path, k)).json()) as {
          data: { id: string; type: string; data: { emailId: string } }[];
        }
      ).data;
    expect((await ids('/events?types=email.sent,email.delivered')).map((e) => e.type).sort()).toEqual([
      'email.delivered',
      'email.delivered',
      'email.delivered',
      'email.sent',
      'email.sent',
      'email.sent',
    ]);
    expect(new Set((await ids('/events?emailId=em-c')).map((e) => e.data.emailId))).toEqual(
      new Set(['em-c']),
    );
    expect(new Set((await ids('/events?tag=receipt')).map((e) => e.data.emailId))).toEqual(new Set(['em-a']));
    expect(new Set((await ids('/events', projectKey)).map((e) => e.data.emailId))).toEqual(new Set(['em-b']));
    expect(await ids('/events?project=prj_other', projectKey)).toEqual([]);
    expect((await get('/events', noScope)).status).toBe(403);
  });

  it('refuses bad input with a 400 naming the field', async () => {
    for (const [path, field] of [
      ['/events?after=abc', 'after'],
      ['/events?after=-1', 'after'],
      ['/events?limit=1001', 'limit'],
      ['/events?limit=0', 'limit'],
      ['/events?types=email.nope', 'types'],
      ['/events?emailId=%00', 'emailId'],
      ['/events/stream?after=1e3', 'after'],
      ['/events?order=oldest', 'order'],
      ['/events?order=newest&before=x', 'before'],
      ['/events?order=newest&after=1', 'after'],
      ['/events?before=5', 'before'],
    ] as const) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(((await res.json()) as { message: string }).message).toContain(field);
    }
    const bad = await get('/events/stream', key, { 'last-event-id': 'x1' });
    expect(bad.status).toBe(400);
  });

  it('an erased recipient’s fields read null, never the clear value', async () => {
    // The projector stored each event's text (the list concatenates it): erasure must not leave it.
    const stored = await stores.pool.query<{ body: string | null }>(
      'SELECT body FROM event_stream WHERE tenant_id = $1 AND email_id = $2',
      [tenant, 'em-c'],
    );
    expect(stored.rows.map((r) => r.body?.includes('em-c@example.com'))).toEqual([true, true, true]);
    // Read before the erasure: the route's page cache holds this page, and must not answer it again.
    expect(await (await get('/events?emailId=em-c')).text()).toContain('em-c@example.com');
    const client = await stores.pool.connect();
    try {
      await eventStream.eraseRecipient?.(client, {
        tenantId: tenant,
        address: 'em-c@example.com',
        recipientHash: 'h',
        emailIds: ['em-c'],
        mentioned: [],
      });
    } finally {
      client.release();
    }
    const page = (await (await get('/events?emailId=em-c')).json()) as {
      data: { data: Record<string, unknown> }[];
    };
    expect(page.data).toHaveLength(3);
    for (const e of page.data) {
      expect(e.data.to).toBeNull();
      expect(e.data.subject).toBeNull();
      expect(JSON.stringify(e)).not.toContain('em-c@example.com');
    }
    const queued = page.data.find((e) => 'toEmail' in e.data);
    expect(queued?.data.toEmail).toBeNull();
  });

  it('a cursor past retention answers 410', async () => {
    const first = (await (await get('/events?limit=1')).json()) as { data: { cursor: string }[] };
    const later = await buildApp(stores, { now: () => new Date(Date.now() + 31 * 86_400_000) } as never);
    try {
      const res = await later.inject({ method: 'GET', url: '/events?after=0', headers: bearer(key) });
      expect(res.statusCode, res.body).toBe(410);
      expect(res.json()).toMatchObject({ code: 'CURSOR_EXPIRED' });
      // Without a cursor: the oldest kept, i.e. nothing.
      const fresh = await later.inject({ method: 'GET', url: '/events', headers: bearer(key) });
      expect(fresh.json()).toMatchObject({ data: [] });
    } finally {
      await later.close();
    }
    expect(first.data).toHaveLength(1);
  });

  it('the SSE tail (npm eventsource) catches up, follows, and resumes after a server restart exactly', async () => {
    const received: { id: string; cursor: string }[] = [];
    const authFetch: typeof fetch = (input, init) =>
      fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...bearer(key) } });
    const source = new EventSource(`${base}/events/stream`, { fetch: authFetch });
    source.onmessage = (m) => {
      const e = JSON.parse(m.data) as { id: string; cursor: string };
      expect(m.lastEventId).toBe(e.cursor);
      received.push(e);
    };
    try {
      await waitFor(async () => received.length >= 9 || undefined, {
        description: 'catch-up',
        timeoutMs: 20_000,
      });
      await project(stores, queued('em-d'));
      await waitFor(async () => received.length >= 12 || undefined, {
        description: 'live',
        timeoutMs: 20_000,
      });
      // The server goes away mid-stream; events are appended meanwhile; a new server on the same port.
      const port = (app.server.address() as AddressInfo).port;
      await app.close();
      await project(stores, queued('em-e'));
      app = await buildApp(stores, clock, {
        limits: { eventStream: { tickMs: 20, pollMs: 100, heartbeatMs: 200 } },
      });
      await app.listen({ port, host: '127.0.0.1' });
      await project(stores, queued('em-f'));
      await waitFor(async () => received.length >= 18 || undefined, {
        description: 'resumed',
        timeoutMs: 30_000,
      });
      await new Promise((r) => setTimeout(r, 300));
      const all = (await (await get('/events?limit=1000')).json()) as { data: { id: string }[] };
      expect(received.map((e) => e.id)).toEqual(all.data.map((e) => e.id));
    } finally {
      source.close();
    }
  }, 90_000);

  it('many streams of one tenant, with filters and from different cursors, each get exactly their events', async () => {
    type Listed = { data: { id: string; cursor: string }[] };
    const listed = async (query: string, k = key) =>
      ((await (await get(`/events?limit=1000${query}`, k)).json()) as Listed).data.map((e) => e.id);
    const before = await listed('');
    const mid = ((await (await get('/events?limit=1000')).json()) as Listed).data[4]!.cursor;
    const specs = [
      { query: '', k: key },
      { query: '', k: key },
      { query: `&after=${mid}`, k: key },
      { query: '&types=email.sent,email.delivered', k: key },
      { query: '&tag=live', k: key },
      { query: '&emailId=em-h', k: key },
      { query: '', k: projectKey },
    ];
    const streams = specs.map(({ query, k }) => {
      const received: string[] = [];
      const authFetch: typeof fetch = (input, init) =>
        fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...bearer(k) } });
      const source = new EventSource(`${base}/events/stream?${query.slice(1)}`, { fetch: authFetch });
      source.onmessage = (m) => {
        const e = JSON.parse(m.data) as { id: string; cursor: string };
        expect(m.lastEventId).toBe(e.cursor);
        received.push(e.id);
      };
      return { query, k, received, source };
    });
    try {
      // Caught up: each has the events it lists; then the group hands out new batches (several emails each).
      await waitFor(async () => (streams[0]!.received.length >= before.length ? true : undefined), {
        description: 'catch-up',
        timeoutMs: 20_000,
      });
      await project(stores, [...queued('em-g', { tags: ['live'] }), ...queued('em-h')]);
      await project(stores, [...queued('em-i', { tags: ['live'] }), ...queued('em-j'), ...queued('em-k')]);
      const all = await listed('');
      expect(all.length).toBe(before.length + 15);
      await waitFor(async () => (streams[0]!.received.length >= all.length ? true : undefined), {
        description: 'live',
        timeoutMs: 20_000,
      });
      await new Promise((r) => setTimeout(r, 300));
      for (const s of streams) expect(s.received, s.query).toEqual(await listed(s.query, s.k));
      expect(streams[4]!.received).toHaveLength(6);
      expect(streams[5]!.received).toHaveLength(3);
    } finally {
      for (const s of streams) s.source.close();
    }
  }, 60_000);

  it('orders cursors as numbers past 9 (10 after 9, not after 1), both ways', async () => {
    await project(stores, [...queued('em-d'), ...queued('em-e')]);
    const all = (await (await get('/events?limit=1000')).json()) as { data: { cursor: string }[] };
    const cursors = all.data.map((e) => Number(e.cursor));
    expect(cursors.length).toBeGreaterThanOrEqual(12);
    expect(cursors).toEqual([...cursors].sort((a, b) => a - b));
    const newest = (await (await get('/events?order=newest&limit=3')).json()) as {
      data: { cursor: string }[];
    };
    expect(newest.data.map((e) => Number(e.cursor))).toEqual([...cursors].reverse().slice(0, 3));
  });
});
