import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createClient } from '@clickhouse/client';
import { createJwtVerifier } from '@tern/auth';
import type { EventStream } from '@tern/event-log';
import { createSecretBox } from '@tern/webhooks';
import Fastify, { type FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiDeps, apiRoutes, createApiApp } from '../../src/index.js';
import { renderResourceIndex } from '../../src/resource-index.js';

// The document is generated from the route schemas; no store is reached (pg and the ClickHouse
// client connect lazily), so this runs without services.

let app: FastifyInstance;
/** Each route's `config`, by `METHOD /open/api/{path}`, as the routes declare it. */
const routeConfigs = new Map<
  string,
  { publicCredential?: string; auth?: string; scope?: string; denyKeys?: boolean }
>();
// biome-ignore lint/suspicious/noExplicitAny: a parsed OpenAPI document, inspected field by field
let doc: any;

beforeAll(async () => {
  const deps: ApiDeps = {
    data: {
      pool: new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:9/none' }),
      ch: createClient({ url: 'http://127.0.0.1:9' }),
    },
    jwt: createJwtVerifier({ secret: 'unit' }),
    policy: { retentionDays: 90 },
    features: {
      trackingSecret: 'unit-tracking-secret-0123456789',
      webhooks: {
        secretBox: createSecretBox('unit-webhook-secrets-key'),
        urlPolicy: { allowPrivate: false },
      },
      // Only the document is read here: no request reaches the log.
      sending: { log: {} as EventStream },
    },
  };
  app = await createApiApp(deps);
  // The same routes in a bare instance whose onRoute hook sees each route's config.
  const probe = Fastify();
  probe.addHook('onRoute', (route) => {
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const method of [route.method].flat()) routeConfigs.set(`${method} ${path}`, route.config ?? {});
  });
  await probe.register(apiRoutes, deps);
  await probe.close();
  const res = await app.inject('/docs/json');
  expect(res.statusCode).toBe(200);
  doc = res.json();
});

afterAll(async () => {
  await app.close();
});

describe('OpenAPI', () => {
  it('serves a browsable UI at /docs', async () => {
    const res = await app.inject('/docs/');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
  });

  it('documents every route, tagged, described, with its security and error responses', () => {
    expect(doc.openapi).toBe('3.1.0');
    // Which routes exist, and who may call them, is the scope matrix's job (scope-matrix.int.test.ts).
    expect(Object.keys(doc.paths).length).toBeGreaterThan(10);
    let publicRoutes = 0;
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(methods)) {
        const op = doc.paths[path][method];
        const config = routeConfigs.get(`${method.toUpperCase()} ${path}`);
        expect(config, `${method} ${path}`).toBeDefined();
        if (config?.publicCredential) {
          // Public routes (they declare `config.publicCredential`): the signed token in their path is their credential.
          publicRoutes++;
          expect(op.summary && op.description && op.operationId, `${method} ${path}`).toBeTruthy();
          expect(op.security, `${method} ${path}`).toEqual([]);
          expect(Object.keys(op.responses), `${method} ${path}`).toContain('404');
          continue;
        }
        expect(op.tags?.length, `${method} ${path}`).toBe(1);
        expect(op.summary, `${method} ${path}`).toBeTruthy();
        expect(op.description, `${method} ${path}`).toBeTruthy();
        expect(op.operationId, `${method} ${path}`).toBeTruthy();
        expect(op.security.length).toBeGreaterThan(0);
        // A route any credential opens (`/mcp`: each call inside is checked as its own route) has no 403.
        const anyCredential = config?.auth === 'jwt_or_key' && config.scope === undefined && !config.denyKeys;
        expect(Object.keys(op.responses)).toEqual(
          expect.arrayContaining(anyCredential ? ['401'] : ['401', '403']),
        );
        const error = op.responses['401'].content['application/json'].schema;
        expect(error.required).toEqual(expect.arrayContaining(['statusCode', 'error', 'message']));
      }
    }
    // The unsubscribe page (GET, POST, its preference form) and the two tracking links.
    expect(publicRoutes).toBe(5);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual([
      'apiKey',
      'apiKeyHeader',
      'dashboardJwt',
    ]);
    expect(doc.paths['/tenants/{id}/api-keys/{keyId}'].delete.responses['404']).toBeDefined();
    expect(doc.paths['/emails/logs'].get.security).toEqual([
      { apiKey: [] },
      { apiKeyHeader: [] },
      { dashboardJwt: [] },
    ]);
    expect(doc.paths['/analytics/summary'].get.security).toEqual([{ dashboardJwt: [] }]);
  });

  it('documents X-Tern-As-Of on the 200 of analytics and logs', () => {
    for (const path of [
      '/analytics/summary',
      '/analytics/daily',
      '/analytics/top-templates',
      '/emails/logs',
    ]) {
      expect(doc.paths[path].get.responses['200'].headers['X-Tern-As-Of'].schema).toEqual({
        type: 'string',
        format: 'date-time',
      });
    }
  });

  it('documents the query parameters as bounded integers with their defaults', () => {
    const params = (path: string) =>
      Object.fromEntries(
        doc.paths[path].get.parameters.map((p: { name: string; schema: unknown }) => [p.name, p.schema]),
      );
    expect(params('/analytics/summary').days).toMatchObject({ type: 'integer', minimum: 1, maximum: 90 });
    expect(params('/emails/logs').limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
    expect(params('/emails/logs').page).toMatchObject({ type: 'integer', minimum: 1 });
  });

  it('carries examples, and missingScope on the 403 of logs', () => {
    const logs200 = doc.paths['/emails/logs'].get.responses['200'].content['application/json'];
    expect(logs200.example ?? logs200.examples).toBeDefined();
    const forbidden = doc.paths['/emails/logs'].get.responses['403'].content['application/json'];
    expect(forbidden.schema.properties.missingScope).toBeDefined();
    expect(JSON.stringify(forbidden)).toContain('Missing required API key scope');
    const body = doc.paths['/tenants/{id}/api-keys'].post.requestBody.content['application/json'];
    expect(body.schema.required).toEqual(['name', 'scopes']);
    expect(body.example ?? body.examples).toBeDefined();
  });
});

describe('resources.generated.ts', () => {
  it('is what `npm run gen:resources` writes: every defineResource of a routes file, mounted', async () => {
    const src = fileURLToPath(new URL('../../src/', import.meta.url));
    const onDisk = await readFile(`${src}resources.generated.ts`, 'utf8');
    expect(onDisk, 'stale: run `npm run gen:resources`').toBe(renderResourceIndex(src));
    for (const name of ['templates', 'suppressions', 'projects', 'topics', 'segments', 'campaigns'])
      expect(onDisk).toContain(`import { ${name}Resource } from './${name}/routes.js';`);
    // Each one is mounted: its list route is in the document.
    for (const path of ['/templates', '/suppressions', '/projects', '/topics', '/segments', '/automations'])
      expect(doc.paths[path]?.get, path).toBeDefined();
  });
});
