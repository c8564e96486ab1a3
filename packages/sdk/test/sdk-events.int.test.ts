// `client.events.*` (SPEC §25) against the real sending pipeline (API + projector + sender with the
// sandbox provider, real Postgres, chDB and the table log), listening on a loopback port.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SendingWorld, wallClock } from '../../../services/api/test/sending-support.js';
import { createKey, jwtFor } from '../../../services/api/test/support.js';
import { waitFor } from '../../../test/support/services.js';
import { type FetchLike, init, TernApiError, type TernEvent } from '../src/index.js';
import { openSendingWorldWithKey } from './support.js';

const TENANT = `sdk-events-${Date.now()}`;
let world: SendingWorld;
let baseUrl: string;
let key: string;

beforeAll(async () => {
  ({ world, baseUrl, key } = await openSendingWorldWithKey(TENANT, [
    'email:send',
    'email:read',
    'events:read',
  ]));
}, 120_000);

afterAll(async () => {
  await world?.close();
});

const email = { from: 'Acme <hello@acme.test>', to: 'delivered@sandbox.test', subject: 'Hi', text: 'Hello' };

/** Every event of the tenant, paging `list` with a small limit. */
async function listAll(tern: ReturnType<typeof init>): Promise<TernEvent[]> {
  const out: TernEvent[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await tern.events.list({ ...(after ? { after } : {}), limit: 2 });
    out.push(...page.data);
    after = page.next;
    if (!page.hasMore) return out;
  }
}

describe('client.events', () => {
  it('list pages every event once; stream yields the same sequence and resumes after a cut connection', async () => {
    const tern = init({ apiKey: key, baseUrl });
    const sent = [await tern.emails.send(email), await tern.emails.send(email)];
    // The first connection is cut after its first event: the iterator must resume after it.
    let connections = 0;
    const cutting: FetchLike = async (url, reqInit) => {
      const res = await fetch(url, reqInit);
      if (++connections > 1 || !res.body) return res;
      // Passes the opening comment and the first event, then fails the connection mid-stream.
      let text = '';
      const reader = res.body.getReader();
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          text += new TextDecoder().decode(value);
          const blocks = text.split('\n\n');
          if (blocks.length < 3) return;
          controller.enqueue(new TextEncoder().encode(`${blocks.slice(0, 2).join('\n\n')}\n\n`));
          await reader.cancel();
          controller.error(new Error('connection cut'));
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const streaming = init({ apiKey: key, baseUrl, fetch: cutting, retryBaseDelayMs: 10 });
    const seen: TernEvent[] = [];
    const controller = new AbortController();
    const done = (async () => {
      for await (const e of streaming.events.stream({ signal: controller.signal })) {
        seen.push(e);
        const delivered = seen.filter((x) => x.type === 'email.delivered').length;
        if (delivered === sent.length) break;
      }
    })();
    await waitFor(
      async () => seen.filter((x) => x.type === 'email.delivered').length === sent.length || undefined,
      {
        description: 'both delivered through the stream',
        timeoutMs: 60_000,
      },
    );
    await done;
    expect(connections).toBeGreaterThan(1);
    const listed = await listAll(tern);
    expect(seen.map((e) => e.id)).toEqual(listed.slice(0, seen.length).map((e) => e.id));
    expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
    expect(new Set(listed.map((e) => e.data.emailId))).toEqual(new Set(sent.map((s) => s.id)));
    // From a cursor: exactly what follows it.
    const mid = listed[2]!;
    const after = await tern.events.list({ after: mid.cursor, limit: 1000 });
    expect(after.data.map((e) => e.id)).toEqual(listed.slice(3).map((e) => e.id));
  }, 90_000);

  it('a bad cursor is a TernApiError 400; a key without events:read gets 403', async () => {
    const tern = init({ apiKey: key, baseUrl });
    await expect(tern.events.list({ after: 'nope' })).rejects.toMatchObject({ status: 400 });
    const owner = jwtFor(wallClock, TENANT);
    const other = (await createKey(world.app, owner, TENANT, { scopes: ['email:read'] })).key;
    const denied = init({ apiKey: other, baseUrl });
    await expect(denied.events.list()).rejects.toBeInstanceOf(TernApiError);
    const iterator = denied.events.stream();
    await expect(iterator.next()).rejects.toMatchObject({ status: 403 });
  });
});

describe('read-your-writes (SPEC §25, issue 49 item 5)', () => {
  it('a send answers its position; a read with Tern-Consistent-With waits for it, else 503 with Retry-After', async () => {
    const tern = init({ apiKey: key, baseUrl, maxRetries: 0 });
    await world.projector.stop();
    let restarted = false;
    try {
      const { id, position } = await tern.emails.send(email);
      expect(position).toBe(`${id}:queued`);
      const batch = await tern.emails.batch([email, email]);
      expect(batch.position).toBe(batch.data[1]!.position);
      // The projector is down: the read cannot include the write within its wait → 503, never a stale answer.
      const stale = await fetch(`${baseUrl}/emails/${id}`, {
        headers: { authorization: `Bearer ${key}`, 'tern-consistent-with': position },
      });
      expect(stale.status).toBe(503);
      expect(stale.headers.get('retry-after')).toBe('1');
      expect(await stale.json()).toMatchObject({ code: 'NOT_CONSISTENT_YET' });
      const bad = await fetch(`${baseUrl}/emails/${id}`, {
        headers: { authorization: `Bearer ${key}`, 'tern-consistent-with': 'not a position!' },
      });
      expect(bad.status).toBe(400);
      // The SDK passes it; the read answers once the projector has folded the send.
      const read = tern.emails.get(id, { consistentWith: position });
      await new Promise((r) => setTimeout(r, 500));
      await world.projector.start();
      restarted = true;
      const detail = await read;
      expect(detail.id).toBe(id);
      expect(detail.events.map((e) => e.type)).toContain('email.queued');
      for (const item of batch.data) {
        const d = await tern.emails.get(item.id, { consistentWith: item.position });
        expect(d.events.map((e) => e.type)).toContain('email.queued');
      }
    } finally {
      if (!restarted) await world.projector.start();
    }
  }, 90_000);
});
