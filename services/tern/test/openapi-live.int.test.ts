// Issue 24 item 14: the OpenAPI document the all-in-one process serves agrees with it. Redocly's
// `recommended` ruleset passes on it, and every documented operation, called on the live server
// (real HTTP, real Postgres, chDB, the Postgres-table log), answers a status the document lists
// for it, with the media type the document gives for that status.
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { signDashboardToken, signTrackingToken } from '@tern/auth';
import { loadConfig } from '@tern/config';
import { createUnsubscribeToken } from '@tern/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/e2e/tern-process.js';
import { createFreshDatabase, tempDir } from '../../../test/support/services.js';
import { type Runtime, SERVICES, startRuntime } from '../src/runtime.js';

const JWT_SECRET = 'openapi-live-jwt-secret-0123456789abcdef';
const INGEST_TOKEN = 'openapi-live-ingest-token-0123456789abcdef';
const TRACKING_SECRET = 'openapi-live-tracking-secret-0123456789';
const TENANT = 'openapi-live';

type Operation = {
  operationId?: string;
  parameters?: { name: string; in: string; schema?: { example?: unknown } }[];
  requestBody?: { content: Record<string, { schema?: { example?: unknown }; example?: unknown }> };
  responses: Record<string, { content?: Record<string, unknown> }>;
  security?: Record<string, string[]>[];
};
type Doc = { servers?: { url: string }[]; paths: Record<string, Record<string, Operation>> };

let db: { url: string; drop(): Promise<void> };
let runtime: Runtime;
let doc: Doc;
const jwt = signDashboardToken({
  secret: JWT_SECRET,
  tenantId: TENANT,
  role: 'owner',
  expiresInSeconds: 3600,
});

beforeAll(async () => {
  db = await createFreshDatabase();
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: db.url,
    DATA_DIR: tempDir('tern-openapi-live-'),
    PORT: String(await freePort()),
    PUBLIC_URL: 'http://127.0.0.1:3999',
  });
  runtime = await startRuntime(config, new Set(SERVICES), {
    jwtSecret: JWT_SECRET,
    ingestToken: INGEST_TOKEN,
    trackingSecret: TRACKING_SECRET,
    webhookSecretsKey: 'openapi-live-webhook-secrets-key-0123456789',
    encryptionKey: 'openapi-live-encryption-key-0123456789abcdef',
  });
  doc = (await (await fetch(`${runtime.url}/docs/json`)).json()) as Doc;
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await db?.drop();
});

/** The example of a media type: its own, or its schema's. */
const exampleOf = (media: { schema?: { example?: unknown }; example?: unknown }) =>
  media.example ?? media.schema?.example;

/** A value for each path parameter: signed tokens for the public links, the tenant for tenant ids. */
function pathFor(path: string): string {
  const emailId = 'em_openapilive0000000000001';
  return path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    if (path.startsWith('/u/')) {
      return createUnsubscribeToken(TRACKING_SECRET, {
        tenantId: TENANT,
        email: 'ada@example.com',
        source: 'manual',
      });
    }
    if (path.startsWith('/t/o/'))
      return signTrackingToken(TRACKING_SECRET, { kind: 'open', tenantId: TENANT, emailId });
    if (path.startsWith('/t/c/'))
      return signTrackingToken(TRACKING_SECRET, {
        kind: 'click',
        tenantId: TENANT,
        emailId,
        url: 'https://a.example/x',
      });
    if (name === 'id' && path.startsWith('/tenants/')) return TENANT;
    if (name === 'email') return 'nobody%40example.com';
    return `${name}_openapilive0000000000001`;
  });
}

async function call(method: string, path: string, op: Operation) {
  const headers: Record<string, string> = {};
  const secured = (op.security ?? []).length > 0;
  if (secured)
    headers.authorization = `Bearer ${op.security?.some((s) => 'ingestToken' in s) ? INGEST_TOKEN : jwt}`;
  let body: string | undefined;
  const content = op.requestBody?.content ?? {};
  const [type, media] = Object.entries(content)[0] ?? [];
  if (type && media) {
    const example = exampleOf(media);
    headers['content-type'] = type;
    body = typeof example === 'string' ? example : JSON.stringify(example ?? {});
  }
  return fetch(`${runtime.url}${pathFor(path)}`, {
    method: method.toUpperCase(),
    headers,
    redirect: 'manual',
    ...(body !== undefined ? { body } : {}),
  });
}

describe('the served OpenAPI document', () => {
  it("passes Redocly's recommended ruleset (no error; only the warnings explained below)", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({
      source: JSON.stringify(doc),
      config,
      absoluteRef: 'openapi.json',
    });
    const found = problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}`);
    expect(found.filter((p) => p.startsWith('error'))).toEqual([]);
    // The click link answers 302 only (a redirect has no 2xx to document), and the project has
    // chosen no license, so the document names none.
    expect(found.sort()).toEqual([
      'warn info-license #/info',
      // `/inbound/routes/{id}` beside `/inbound/{id}/raw`: the SPEC's paths; the static segment wins.
      'warn no-ambiguous-paths #/paths/~1inbound~1routes~1{id}',
      // `/mcp` is stateless: GET and DELETE answer 405 only (the MCP transport's own rule).
      'warn operation-2xx-response #/paths/~1mcp/delete/responses',
      'warn operation-2xx-response #/paths/~1mcp/get/responses',
      'warn operation-2xx-response #/paths/~1t~1c~1{token}/get/responses',
    ]);
  });

  it('names its server and documents the media types the server sends', () => {
    expect(doc.servers).toEqual([{ url: 'http://127.0.0.1:3999', description: 'This Tern (PUBLIC_URL)' }]);
    expect(Object.keys(doc.paths['/contacts/export']!.get!.responses['200']!.content!)).toEqual(['text/csv']);
    expect(Object.keys(doc.paths['/u/{token}']!.get!.responses['200']!.content!)).toEqual(['text/html']);
    expect(Object.keys(doc.paths['/u/{token}']!.post!.responses['200']!.content!)).toEqual(['text/html']);
    expect(Object.keys(doc.paths['/t/o/{token}']!.get!.responses['200']!.content!)).toEqual(['image/gif']);
    expect(Object.keys(doc.paths['/contacts/import']!.post!.requestBody!.content)).toContain('text/csv');
    const events = doc.paths['/events']!.post!;
    expect(events.operationId).toBe('appendEvents');
    expect(events.security).toEqual([{ ingestToken: [] }]);
    expect(Object.keys(events.requestBody!.content)).toEqual(['application/json']);
    expect(Object.keys(events.responses)).toEqual(expect.arrayContaining(['202', '400', '401']));
  });

  it('every documented operation answers a documented status with the documented media type', async () => {
    const mismatches: string[] = [];
    const seen = new Map<string, number>();
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const res = await call(method, path, op);
        const status = String(res.status);
        seen.set(`${method.toUpperCase()} ${path}`, res.status);
        const documented = op.responses[status] ?? op.responses[`${status[0]}XX`] ?? op.responses.default;
        const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
        // A live tail (`GET /events/stream`) never ends: its headers are the answer.
        if (type === 'text/event-stream') await res.body?.cancel();
        else await res.arrayBuffer();
        if (!documented) {
          mismatches.push(
            `${method.toUpperCase()} ${path}: ${status} not documented (${Object.keys(op.responses)})`,
          );
          continue;
        }
        const types = Object.keys(documented.content ?? {});
        if (types.length > 0 && !types.includes(type))
          mismatches.push(
            `${method.toUpperCase()} ${path}: ${status} sent ${type || 'no type'}, documented ${types}`,
          );
      }
    }
    expect(mismatches).toEqual([]);
    // The answers the issue named, on the live server.
    expect(seen.get('GET /contacts/export')).toBe(200);
    expect(seen.get('GET /u/{token}')).toBe(200);
    expect(seen.get('GET /t/o/{token}')).toBe(200);
    expect(seen.get('POST /events')).toBe(202);
    expect(seen.get('POST /contacts/import')).toBe(200);
    const refused = await fetch(`${runtime.url}/events`, { method: 'POST', body: '{}' });
    expect(refused.status).toBe(401);
    expect(doc.paths['/events']!.post!.responses['401']).toBeDefined();
  }, 120_000);
});
