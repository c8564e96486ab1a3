import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { TERN_TOOLS } from '@tern/api';
import { signDashboardToken } from '@tern/auth';
import { MISSING_SCOPE_MESSAGE } from '@tern/contracts';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, waitFor } from '../support/services.js';
import { buildTern, freePort, startTern, type TernProcess } from './tern-process.js';

// SPEC §28 over stdio: the official SDK's StdioClientTransport starts `npm run --silent mcp` (the
// built bundle, as an agent's configuration does) with a key in its environment, against `npm
// start` (sandbox provider, the Postgres-table log, the MX listener): tools listed and called, each
// gated by the key's scopes, bad input a tool error, an unreachable Tern a tool error.

const SECRET = 'mcp-stdio-e2e-secret-long-enough-for-hs256';
const TENANT = 'acme';
const INBOUND_DOMAIN = 'in.mcp.test';
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

type ToolResult = {
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

let tern: TernProcess;
let db: Awaited<ReturnType<typeof createFreshDatabase>>;
const keys = { send: '', read: '', inbound: '', analytics: '', events: '' };
let inboundPort: number;
/** The tenant's receiving domain, `acme.in.mcp.test` (GET /inbound/domain). */
let inboundHost: string;
const clients: Client[] = [];

/** `npm run --silent mcp` started by the SDK's stdio client, with only PATH, HOME and the key. */
async function connect(apiKey: string, url = tern.url): Promise<Client> {
  const client = new Client({ name: 'tern-e2e', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: 'npm',
      args: ['run', '--silent', 'mcp'],
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        TERN_API_KEY: apiKey,
        TERN_URL: url,
      },
      stderr: 'pipe',
    }),
  );
  clients.push(client);
  return client;
}
const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as ToolResult;
const textOf = (r: ToolResult) => r.content.map((c) => c.text).join('\n');

beforeAll(async () => {
  buildTern();
  // The Postgres server (a database of its own) rather than PGlite: no embedded initdb to wait for.
  db = await createFreshDatabase();
  inboundPort = await freePort();
  tern = await startTern({
    env: {
      DATA_DIR: tempDir('tern-e2e-mcp-'),
      DATABASE_URL: db.url,
      JWT_SECRET: SECRET,
      NODE_ENV: 'development',
      INBOUND_SMTP_PORT: String(inboundPort),
      INBOUND_DOMAIN,
    },
    readyTimeoutMs: 300_000,
  });
  const jwt = signDashboardToken({ secret: SECRET, tenantId: TENANT, role: 'owner', expiresInSeconds: 600 });
  for (const [name, scopes] of [
    ['send', ['email:send']],
    ['read', ['email:read']],
    ['inbound', ['inbound:read']],
    ['analytics', ['analytics:read']],
    ['events', ['events:read']],
  ] as const) {
    const res = await fetch(`${tern.url}/tenants/${TENANT}/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `mcp ${name}`, scopes }),
    });
    expect(res.status).toBe(201);
    keys[name] = ((await res.json()) as { key: string }).key;
  }
  const domain = await fetch(`${tern.url}/inbound/domain`, { headers: { authorization: `Bearer ${jwt}` } });
  inboundHost = ((await domain.json()) as { domain: string }).domain;
  expect(inboundHost).toBe(`${TENANT}.${INBOUND_DOMAIN}`);
}, 420_000);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await tern?.stop();
  await db?.drop();
});

describe('npm run mcp (stdio) against npm start', () => {
  it('lists the tools; send_email, get_email and list_logs work within the key’s scopes', async () => {
    const sender = await connect(keys.send);
    const { tools } = await sender.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TERN_TOOLS.map((t) => t.name).sort());
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['list_inbound', 'get_inbound']));

    const sent = await call(sender, 'send_email', {
      from: 'Acme <hello@acme.test>',
      to: 'delivered@sandbox.test',
      subject: 'Over stdio',
      text: 'Hi',
    });
    expect(sent.isError, textOf(sent)).toBeFalsy();
    const id = sent.structuredContent?.id as string;
    expect(id).toMatch(/^em_/);

    const reader = await connect(keys.read);
    const detail = await waitFor(
      async () => {
        const got = await call(reader, 'get_email', { id });
        return got.structuredContent?.status === 'DELIVERED' ? got.structuredContent : null;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: `${id} delivered` },
    );
    expect((detail.events as { type: string }[]).map((e) => e.type)).toEqual(
      expect.arrayContaining(['email.queued', 'email.sent', 'email.delivered']),
    );
    const page = await call(reader, 'list_logs', { status: 'DELIVERED', limit: 10 });
    expect((page.structuredContent!.data as { id: string }[]).map((e) => e.id)).toContain(id);
  }, 120_000);

  it('scopes: the read key cannot send, the send key cannot read — tool errors, the process lives on', async () => {
    const reader = await connect(keys.read);
    const refused = await call(reader, 'send_email', {
      from: 'hello@acme.test',
      to: 'delivered@sandbox.test',
      subject: 'Never',
      text: 'x',
    });
    expect(refused).toMatchObject({ isError: true });
    expect(textOf(refused)).toBe(`Tern answered 403 MISSING_SCOPE: ${MISSING_SCOPE_MESSAGE}`);
    const sender = await connect(keys.send);
    for (const [name, args] of [
      ['get_email', { id: 'em_x' }],
      ['list_logs', {}],
    ] as const) {
      const denied = await call(sender, name, args);
      expect(denied.isError).toBe(true);
      expect(textOf(denied)).toContain('403 MISSING_SCOPE');
    }
    const bad = await call(reader, 'list_logs', { limit: 1000 });
    expect(textOf(bad)).toMatch(/^Invalid arguments: limit: /);
    expect((await reader.listTools()).tools.length).toBe(TERN_TOOLS.length);
  }, 120_000);

  it('list_inbound and get_inbound read mail the MX listener received; without inbound:read, tool errors', async () => {
    // Delivered over SMTP to `npm start`'s MX listener (INBOUND_SMTP_PORT), as a sender's MTA would.
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: inboundPort,
      secure: false,
      ignoreTLS: true,
    });
    const info = await transport.sendMail({
      from: 'Bea <bea@customer.test>',
      to: `help@${inboundHost}`,
      subject: 'Received over stdio',
      text: 'Can an agent read this?',
    });
    transport.close();
    expect(info.response).toMatch(/^250 /);
    const reader = await connect(keys.inbound);
    const listed = await call(reader, 'list_inbound', { from: 'bea@customer.test', limit: '10' });
    expect(listed.isError, textOf(listed)).toBeFalsy();
    const data = listed.structuredContent!.data as { id: string; subject: string; to: string[] }[];
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({ subject: 'Received over stdio', to: [`help@${inboundHost}`] });
    const got = await call(reader, 'get_inbound', { id: data[0]!.id });
    expect(got.isError, textOf(got)).toBeFalsy();
    expect(got.structuredContent).toMatchObject({
      id: data[0]!.id,
      from: 'bea@customer.test',
      text: expect.stringContaining('Can an agent read this?'),
    });
    const other = await connect(keys.read);
    for (const [name, args] of [
      ['list_inbound', {}],
      ['get_inbound', { id: data[0]!.id }],
    ] as const) {
      const denied = await call(other, name, args);
      expect(denied.isError, name).toBe(true);
      expect(textOf(denied), name).toBe(`Tern answered 403 MISSING_SCOPE: ${MISSING_SCOPE_MESSAGE}`);
    }
    const bad = await call(reader, 'list_inbound', { since: 'last week' });
    expect(textOf(bad)).toMatch(/^Invalid arguments: since: /);
  }, 120_000);

  it('list_events, get_analytics_breakdown and get_analytics_summary answer as their routes, each within its scope', async () => {
    const sent = await call(await connect(keys.send), 'send_email', {
      from: 'Acme <hello@acme.test>',
      to: 'delivered@sandbox.test',
      subject: 'Evented over stdio',
      text: 'Hi',
    });
    const emailId = sent.structuredContent?.id as string;
    expect(emailId).toMatch(/^em_/);

    const events = await connect(keys.events);
    const page = await waitFor(
      async () => {
        const got = await call(events, 'list_events', { emailId, limit: 50 });
        const types =
          (got.structuredContent?.data as { type: string }[] | undefined)?.map((e) => e.type) ?? [];
        return types.includes('email.delivered') ? got.structuredContent : null;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: `${emailId}'s events through list_events` },
    );
    expect((page.data as { type: string }[])[0]?.type).toBe('email.queued');
    expect(textOf(await call(await connect(keys.read), 'list_events', {}))).toContain('403 MISSING_SCOPE');

    const analytics = await connect(keys.analytics);
    const rows = await call(analytics, 'get_analytics_breakdown', { by: 'tag', days: 7 });
    expect(rows.isError, textOf(rows)).toBeFalsy();
    expect(rows.structuredContent).toBeTypeOf('object');
    expect(textOf(await call(events, 'get_analytics_breakdown', { by: 'tag', days: 7 }))).toContain(
      '403 MISSING_SCOPE',
    );
    // The summary is a dashboard session's route (SPEC §28 keeps its credential rule): a key is
    // refused with the route's 403, a dashboard JWT given as the key is answered.
    const keyed = await call(analytics, 'get_analytics_summary', { days: 7 });
    expect(keyed.isError).toBe(true);
    expect(textOf(keyed)).toMatch(/^Tern answered 403 /);
    const jwt = signDashboardToken({
      secret: SECRET,
      tenantId: TENANT,
      role: 'owner',
      expiresInSeconds: 600,
    });
    const summary = await call(await connect(jwt), 'get_analytics_summary', { days: 7 });
    expect(summary.isError, textOf(summary)).toBeFalsy();
    expect(summary.structuredContent).toMatchObject({ period: { days: 7 }, totals: expect.any(Object) });
  }, 120_000);

  it('an unknown key and an unreachable Tern are tool errors, not crashes', async () => {
    const unknown = await connect('tern_0000000000000000000000000000000000000000');
    expect(textOf(await call(unknown, 'list_logs', {}))).toMatch(/^Tern answered 401 INVALID_CREDENTIAL: /);
    const nowhere = await connect(keys.read, 'http://127.0.0.1:9');
    const result = await call(nowhere, 'list_logs', {});
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^Tern at http:\/\/127\.0\.0\.1:9 could not be reached/);
    expect(textOf(result)).not.toContain(keys.read);
  }, 120_000);
});
