import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MISSING_SCOPE_MESSAGE } from '@tern/contracts';
import {
  createInboundListener,
  createRecipientResolver,
  ensureInboundAddress,
  type InboundListener,
} from '@tern/inbound';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../../test/support/dns-server.js';
import { waitFor } from '../../../../test/support/services.js';
import { TERN_TOOLS } from '../../src/index.js';
import { openSendingWorld, type SendingWorld, wallClock } from '../sending-support.js';
import { buildApp, createKey, jwtFor, suffix } from '../support.js';

// The MCP server at /mcp (SPEC §28) driven by the official SDK's own client over Streamable HTTP, on
// a real socket, into the real routes (Postgres, the log, projector, sandbox sender, chDB): tools
// listed and called, each gated by its route's scope, bad input a tool error, the API's
// credential checks in front. Inbound mail comes in over SMTP through the real MX listener.
type ToolResult = {
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

let world: SendingWorld;
let base: string;
const A = `mcp-${suffix()}`;
const keys: Record<'all' | 'send' | 'read' | 'events' | 'inbound' | 'none', string> = {
  all: '',
  send: '',
  read: '',
  events: '',
  inbound: '',
  none: '',
};
const clients: Client[] = [];
const INBOUND_DOMAIN = 'in.mcp.test';
let dns: TestDnsServer;
let mx: InboundListener;
let mxPort: number;
/** A's receiving address under INBOUND_DOMAIN (`<slug>.in.mcp.test`). */
let inboundHost: string;

/** An SDK client connected to /mcp with `credential` in the Authorization header. */
async function connect(credential: string): Promise<Client> {
  const client = new Client({ name: 'tern-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${credential}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as ToolResult;
const textOf = (result: ToolResult) => result.content.map((c) => c.text).join('\n');
const mail = (subject: string) => ({
  from: 'Acme <hello@acme.test>',
  to: 'delivered@sandbox.test',
  subject,
  text: 'Hi',
  tags: ['mcp'],
});

beforeAll(async () => {
  world = await openSendingWorld();
  await world.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(world.app.server.address() as AddressInfo).port}`;
  const jwt = jwtFor(wallClock, A);
  keys.all = (await createKey(world.app, jwt, A, { scopes: ['email:send', 'email:read'] })).key;
  keys.send = (await createKey(world.app, jwt, A, { scopes: ['email:send'] })).key;
  keys.read = (await createKey(world.app, jwt, A, { scopes: ['email:read'] })).key;
  keys.events = (await createKey(world.app, jwt, A, { scopes: ['events:read'] })).key;
  keys.inbound = (await createKey(world.app, jwt, A, { scopes: ['inbound:read'] })).key;
  keys.none = (await createKey(world.app, jwt, A, { scopes: ['templates:read'] })).key;
  // The MX listener as `npm start` runs it (SPEC §24), on the app's keyring and log.
  dns = await startTestDnsServer();
  inboundHost = `${await ensureInboundAddress(world.stores.pool, A)}.${INBOUND_DOMAIN}`;
  mx = createInboundListener({
    pool: world.stores.pool,
    keyring: world.keyring,
    log: world.log,
    resolve: (name, type) => dns.resolve(name, type),
    host: '127.0.0.1',
    port: 0,
    maxBytes: 1024 * 1024,
    hostname: 'mx.mcp.test',
    tenantsOf: createRecipientResolver({
      pool: world.stores.pool,
      inboundDomain: INBOUND_DOMAIN,
      receivingTenants: async () => [],
    }),
  });
  mxPort = await mx.start();
}, 120_000);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await mx?.stop();
  await dns?.close();
  await world?.close();
});

describe('tools/list', () => {
  it('lists every tool with the route schema as its input schema, whatever the key’s scopes', async () => {
    const { tools } = await (await connect(keys.none)).listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TERN_TOOLS.map((t) => t.name).sort());
    for (const tool of tools) expect(tool.inputSchema.type).toBe('object');
    const send = tools.find((t) => t.name === 'send_email')!;
    expect(Object.keys(send.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(['from', 'to', 'subject', 'html', 'text', 'templateId', 'attachments']),
    );
    expect(send.annotations).toMatchObject({ readOnlyHint: false });
    const logs = tools.find((t) => t.name === 'list_logs')!;
    expect(Object.keys(logs.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(['status', 'from', 'to', 'tag', 'q', 'projectId', 'cursor', 'limit']),
    );
    const inbound = tools.find((t) => t.name === 'list_inbound')!;
    expect(Object.keys(inbound.inputSchema.properties ?? {}).sort()).toEqual(
      ['cursor', 'from', 'limit', 'since', 'to'].sort(),
    );
    expect(inbound.annotations).toMatchObject({ readOnlyHint: true });
    const one = tools.find((t) => t.name === 'get_inbound')!;
    expect(one.inputSchema).toMatchObject({ required: ['id'], properties: { id: { type: 'string' } } });
  });
});

describe('send_email, get_email and list_logs', () => {
  it('send_email with email:send sends; get_email shows it delivered with its timeline', async () => {
    const sent = await call(await connect(keys.send), 'send_email', mail('Sent by an agent'));
    expect(sent.isError, textOf(sent)).toBeFalsy();
    const id = sent.structuredContent?.id as string;
    expect(id).toMatch(/^em_/);
    const reader = await connect(keys.read);
    const detail = await waitFor(
      async () => {
        const got = await call(reader, 'get_email', { id });
        return got.structuredContent?.status === 'DELIVERED' ? got.structuredContent : null;
      },
      { timeoutMs: 30_000, description: `${id} delivered through get_email` },
    );
    expect(detail).toMatchObject({ id, subject: 'Sent by an agent', toEmail: 'delivered@sandbox.test' });
    const types = (detail.events as { type: string }[]).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['email.queued', 'email.sent', 'email.delivered']));
  });

  it('send_email without email:send is the route’s 403 as a tool error, and nothing is sent', async () => {
    const subject = `Refused ${suffix()}`;
    const refused = await call(await connect(keys.read), 'send_email', mail(subject));
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe(`Tern answered 403 MISSING_SCOPE: ${MISSING_SCOPE_MESSAGE}`);
    // A send accepted after it is listed; the refused one never is.
    const marker = await call(await connect(keys.send), 'send_email', mail(`After ${subject}`));
    const reader = await connect(keys.read);
    await waitFor(
      async () => {
        const page = await call(reader, 'list_logs', { q: 'delivered@sandbox.test', limit: 100 });
        const ids = (page.structuredContent!.data as { id: string }[]).map((e) => e.id);
        return ids.includes(marker.structuredContent?.id as string) ? true : null;
      },
      { timeoutMs: 30_000, description: 'the marker send listed' },
    );
    const page = await call(reader, 'list_logs', { limit: 100 });
    const subjects = (page.structuredContent!.data as { subject: string }[]).map((e) => e.subject);
    expect(subjects).toContain(`After ${subject}`);
    expect(subjects).not.toContain(subject);
  });

  it('get_email without email:read is a tool error; an unknown id is the route’s 404', async () => {
    const denied = await call(await connect(keys.send), 'get_email', { id: 'em_nothing' });
    expect(denied).toMatchObject({ isError: true });
    expect(textOf(denied)).toContain('403 MISSING_SCOPE');
    const missing = await call(await connect(keys.read), 'get_email', { id: 'em_nothing' });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/^Tern answered 404 NOT_FOUND: /);
  });

  it('list_logs filters as the route does (numbers or strings), and needs email:read', async () => {
    const sent = await call(await connect(keys.all), 'send_email', {
      ...mail('Tagged'),
      tags: ['mcp-filter'],
    });
    const id = sent.structuredContent?.id as string;
    const reader = await connect(keys.read);
    const page = await waitFor(
      async () => {
        const got = await call(reader, 'list_logs', { tag: 'mcp-filter', status: 'delivered', limit: 5 });
        const data = got.structuredContent?.data as { id: string }[];
        return data.length > 0 ? got.structuredContent : null;
      },
      { timeoutMs: 30_000, description: 'the tagged email listed as delivered' },
    );
    expect((page.data as { id: string }[]).map((e) => e.id)).toEqual([id]);
    expect(page.meta).toMatchObject({ limit: 5, total: 1 });
    const asStrings = await call(reader, 'list_logs', { tag: 'mcp-filter', limit: '5', page: '1' });
    expect(asStrings.structuredContent?.data).toEqual(page.data);
    const denied = await call(await connect(keys.send), 'list_logs', {});
    expect(textOf(denied)).toContain('403 MISSING_SCOPE');
  });
});

describe('analytics', () => {
  it('get_analytics_summary answers as its route: a key without the analytics scope gets its 403', async () => {
    const denied = await call(await connect(keys.all), 'get_analytics_summary', { days: 7 });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toMatch(/^Tern answered 403 /);
    const dashboard = await call(await connect(jwtFor(wallClock, A)), 'get_analytics_summary', { days: 7 });
    expect(dashboard.isError, textOf(dashboard)).toBeFalsy();
    expect(dashboard.structuredContent).toMatchObject({ period: { days: 7 }, totals: expect.any(Object) });
  });
});

describe('get_analytics_breakdown', () => {
  it('with analytics:read answers the route’s rows; without it, the route’s 403', async () => {
    const jwt = jwtFor(wallClock, A);
    const key = (await createKey(world.app, jwt, A, { scopes: ['analytics:read'] })).key;
    const rows = await call(await connect(key), 'get_analytics_breakdown', { by: 'tag', days: 7 });
    expect(rows.isError, textOf(rows)).toBeFalsy();
    expect(rows.structuredContent).toBeTypeOf('object');
    const denied = await call(await connect(keys.all), 'get_analytics_breakdown', { by: 'tag', days: 7 });
    expect(textOf(denied)).toBe(`Tern answered 403 MISSING_SCOPE: ${MISSING_SCOPE_MESSAGE}`);
    const bad = await call(await connect(key), 'get_analytics_breakdown', { by: 'weather' });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toMatch(/^Invalid arguments: by: /);
  });
});

describe('list_events', () => {
  it('with events:read: an email’s events in order, then nothing after the last cursor; without: 403', async () => {
    const sent = await call(await connect(keys.send), 'send_email', mail('Evented'));
    const emailId = sent.structuredContent?.id as string;
    const reader = await connect(keys.events);
    const page = await waitFor(
      async () => {
        const got = await call(reader, 'list_events', { emailId, limit: 50 });
        const types =
          (got.structuredContent?.data as { type: string }[] | undefined)?.map((e) => e.type) ?? [];
        return types.includes('email.delivered') ? got.structuredContent : null;
      },
      { timeoutMs: 30_000, description: `${emailId}'s events through list_events` },
    );
    const events = page.data as { type: string; cursor: string }[];
    expect(events[0]?.type).toBe('email.queued');
    const cursors = events.map((e) => BigInt(e.cursor));
    expect(cursors).toEqual([...cursors].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    const after = await call(reader, 'list_events', {
      emailId,
      after: page.next as string,
      types: 'email.queued',
    });
    expect(after.structuredContent).toMatchObject({ data: [], hasMore: false });
    const denied = await call(await connect(keys.all), 'list_events', {});
    expect(textOf(denied)).toBe(`Tern answered 403 MISSING_SCOPE: ${MISSING_SCOPE_MESSAGE}`);
  });
});

describe('list_inbound and get_inbound', () => {
  /** Delivers a message over SMTP to the MX listener (nodemailer's SMTP client); answers its `250` line. */
  async function receive(message: SendMailOptions): Promise<string> {
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: mxPort,
      secure: false,
      ignoreTLS: true,
    });
    try {
      return (await transport.sendMail(message)).response;
    } finally {
      transport.close();
    }
  }

  it('with inbound:read: the received mail listed (metadata), then read whole — never its raw MIME', async () => {
    const sender = `ann-${suffix()}@sender.test`;
    const response = await receive({
      from: `Ann <${sender}>`,
      to: `support@${inboundHost}`,
      subject: 'Question for an agent',
      text: 'Where is my invoice?',
      html: '<p>Where is my invoice?</p>',
      attachments: [
        { filename: 'scan.pdf', content: Buffer.from('%PDF-1.4 mcp'), contentType: 'application/pdf' },
      ],
    });
    expect(response).toMatch(/^250 .*inb_/);
    const reader = await connect(keys.inbound);
    const listed = await call(reader, 'list_inbound', { from: sender, limit: 5 });
    expect(listed.isError, textOf(listed)).toBeFalsy();
    const page = listed.structuredContent as {
      data: Record<string, unknown>[];
      meta: { limit: number; nextCursor: string | null };
    };
    expect(page.meta).toEqual({ limit: 5, nextCursor: null });
    expect(page.data).toHaveLength(1);
    const summary = page.data[0]!;
    expect(summary).toMatchObject({
      from: sender,
      to: [`support@${inboundHost}`],
      subject: 'Question for an agent',
      inReplyTo: null,
      auth: expect.objectContaining({ spf: expect.any(String), dkim: expect.any(String) }),
    });
    expect(response).toContain(summary.id as string);
    // The route's own answer, the same JSON.
    const direct = await world.app.inject({
      url: `/inbound?from=${encodeURIComponent(sender)}&limit=5`,
      headers: { authorization: `Bearer ${keys.inbound}` },
    });
    expect(JSON.parse(textOf(listed))).toEqual(direct.json());

    const got = await call(reader, 'get_inbound', { id: summary.id });
    expect(got.isError, textOf(got)).toBeFalsy();
    expect(got.structuredContent).toMatchObject({
      id: summary.id,
      from: sender,
      subject: 'Question for an agent',
      text: expect.stringContaining('Where is my invoice?'),
      html: expect.stringContaining('<p>Where is my invoice?</p>'),
      attachments: [{ filename: 'scan.pdf', size: 12 }],
      clientIp: '127.0.0.1',
    });
    expect(Object.keys(got.structuredContent!)).not.toContain('raw');
    expect(textOf(got)).not.toContain('%PDF-1.4 mcp');
    expect(textOf(got)).not.toContain(Buffer.from('%PDF-1.4 mcp').toString('base64'));
    // Other filters reach the route: nothing of that sender since a minute from now.
    const later = await call(reader, 'list_inbound', {
      from: sender,
      since: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(later.structuredContent).toMatchObject({ data: [] });
  });

  it('without inbound:read both are the route’s 403 as a tool error; an unknown id is its 404', async () => {
    const other = await connect(keys.all);
    for (const [name, args] of [
      ['list_inbound', {}],
      ['get_inbound', { id: 'inb_0mif3x2k9a8b7c6d5e4f3g2h1i' }],
    ] as const) {
      const denied = await call(other, name, args);
      expect(denied.isError, name).toBe(true);
      expect(textOf(denied), name).toBe(`Tern answered 403 MISSING_SCOPE: ${MISSING_SCOPE_MESSAGE}`);
    }
    const missing = await call(await connect(keys.inbound), 'get_inbound', {
      id: 'inb_0mif3x2k9a8b7c6d5e4f3g2h1i',
    });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/^Tern answered 404 NOT_FOUND: /);
  });
});

describe('bad input is a tool error, never a crash', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['list_logs', { limit: 0 }, /limit: limit must be an integer from 1 to 100/],
    ['list_logs', { status: 'NOPE' }, /status: status must be one of/],
    ['list_logs', { limit: { many: true } }, /limit: must be a string or a number/],
    ['list_logs', { from: '2026-06-02T00:00:00Z', to: '2026-06-01T00:00:00Z' }, /from must not be after to/],
    ['get_email', {}, /id: /],
    ['get_email', { id: 'em_1', extra: 'x' }, /unknown extra/],
    ['send_email', { from: 'not an address', to: 'a@b.test', subject: 's', text: 't' }, /from/],
    ['send_email', { to: [], subject: 's' }, /Invalid arguments/],
    ['get_analytics_summary', { days: 1000 }, /days: days must be an integer from 1 to 90/],
    ['list_events', { after: 'yesterday' }, /after: after must be a cursor/],
    ['list_events', { types: 'email.exploded' }, /types\.0: types must be a comma list of/],
    ['list_inbound', { limit: 0 }, /limit: /],
    ['list_inbound', { since: 'yesterday' }, /since: since must be an ISO 8601 timestamp/],
    ['list_inbound', { subject: 'x' }, /Unrecognized key: "subject"/],
    ['get_inbound', {}, /id: /],
    ['get_inbound', { id: '' }, /id: must not be empty/],
    ['get_inbound', { id: `inb_${'x'.repeat(80)}` }, /id: /],
  ];
  it.each(cases)('%s %j', async (name, args, message) => {
    const client = await connect(keys.all);
    const result = await call(client, name, args);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(message);
    // The server still answers.
    expect((await client.listTools()).tools.length).toBe(TERN_TOOLS.length);
  });

  it('an unknown tool is the protocol’s invalid-params error', async () => {
    const client = await connect(keys.all);
    await expect(client.callTool({ name: 'drop_tables', arguments: {} })).rejects.toThrow(
      /Unknown tool: drop_tables/,
    );
    expect((await client.listTools()).tools.length).toBe(TERN_TOOLS.length);
  });
});

describe('the HTTP endpoint', () => {
  const post = (headers: Record<string, string>, body: string) =>
    fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body,
    });
  const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });

  it('no credential → 401, an unknown key → 401: the API’s checks run before MCP', async () => {
    expect((await post({}, LIST)).status).toBe(401);
    const unknown = await post({ authorization: `Bearer tern_${suffix()}${suffix()}${suffix()}` }, LIST);
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ code: 'INVALID_CREDENTIAL' });
  });

  it('refused credentials count in the API’s failed-credential limiter: past its budget, 429', async () => {
    const app = await buildApp(world.stores, wallClock, {
      limits: { rateLimit: { max: 3, timeWindowMs: 60_000 } },
      features: { sending: { log: world.log } },
    });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`;
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await fetch(url, {
          method: 'POST',
          headers: {
            authorization: `Bearer tern_${suffix()}${suffix()}${suffix()}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: LIST,
        });
        statuses.push(res.status);
        if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
      // A valid key from the same address is still served (the limiter's rule for every route).
      const served = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${keys.read}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: LIST,
      });
      expect(served.status).toBe(200);
      const answer = (await served.json()) as { result: { tools: unknown[] } };
      expect(answer.result.tools.length).toBe(TERN_TOOLS.length);
    } finally {
      await app.close();
    }
  });

  it('the SDK client is refused with the 401 when its key is unknown', async () => {
    await expect(connect(`tern_${suffix()}${suffix()}${suffix()}`)).rejects.toThrow(/401/);
  });

  it('GET and DELETE /mcp → 405 with Allow: POST (stateless server)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${base}/mcp`, { method, headers: { authorization: `Bearer ${keys.all}` } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(await res.json()).toMatchObject({ statusCode: 405, code: 'METHOD_NOT_ALLOWED' });
    }
  });

  it('a message that is not JSON-RPC, or not JSON, is a 4xx, never a 500', async () => {
    const auth = { authorization: `Bearer ${keys.all}` };
    for (const body of ['{}', '{"jsonrpc":"2.0","id":1}', '"x"', 'null', '[{"jsonrpc":"1.0"}]']) {
      const res = await post(auth, body);
      expect(res.status, body).toBeGreaterThanOrEqual(400);
      expect(res.status, body).toBeLessThan(500);
    }
    // An empty batch holds no request: nothing to answer (the SDK's 202).
    expect((await post(auth, '[]')).status).toBe(202);
    expect((await post(auth, '{"jsonrpc":')).status).toBe(400);
    // Without the Accept the transport requires: 406, as the MCP transport specifies.
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: LIST,
    });
    expect(res.status).toBe(406);
  });
});
