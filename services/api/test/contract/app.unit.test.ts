import { readFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createJwtVerifier, REDACT_OPTIONS, signDashboardToken } from '@tern/auth';
import { validateEvents } from '@tern/contracts';
import type { EventStream } from '@tern/event-log';
import { createSecretBox } from '@tern/webhooks';
import fc from 'fast-check';
import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiDeps,
  type ApiStores,
  apiRoutes,
  CREDENTIAL_EXTENSION,
  createApiApp,
  INGEST_EXAMPLE,
  newResourceId,
  type OpenApiDocument,
  referenceDocument,
  renderApiReference,
} from '../../src/index.js';
import { renderResourceIndex } from '../../src/resource-index.js';
import { type AppOverrides, unreachableStores, withOverrides } from '../support.js';

describe("the app's wiring", () => {
  // Wiring of the app that needs no store: health, readiness, the logger choices.

  const build = (extra: AppOverrides = {}) =>
    createApiApp(
      withOverrides(
        {
          data: unreachableStores(),
          jwt: createJwtVerifier({ secret: 'unit' }),
          policy: { retentionDays: 90 },
        },
        extra,
      ),
    );

  /** A GET with the dashboard token of tenant acme's owner. */
  function getAsOwner(app: Awaited<ReturnType<typeof createApiApp>>, url: string) {
    const token = signDashboardToken({
      secret: 'unit',
      tenantId: 'acme',
      role: 'owner',
      expiresInSeconds: 60,
    });
    return app.inject({ url, headers: { authorization: `Bearer ${token}` } });
  }

  describe('createApiApp', () => {
    it('answers /health, and /ready with 503 naming the stores that do not answer', async () => {
      const app = await build();
      try {
        expect((await app.inject('/health')).json()).toEqual({ status: 'ok' });
        const ready = await app.inject('/ready');
        expect(ready.statusCode).toBe(503);
        expect(ready.json().message).toBe('Not ready: postgres, clickhouse unavailable');
      } finally {
        await app.close();
      }
    });

    it('uses the readiness checks it is given', async () => {
      const app = await build({ http: { readiness: [{ name: 'event-log', check: async () => {} }] } });
      try {
        expect((await app.inject('/ready')).json()).toEqual({
          status: 'ready',
          checks: { 'event-log': 'ok' },
        });
      } finally {
        await app.close();
      }
    });

    it('logs through a logger instance it is given', async () => {
      const lines: string[] = [];
      const stream = new Writable({
        write(chunk, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      });
      const app = await build({ http: { logger: pino({ level: 'info', redact: REDACT_OPTIONS }, stream) } });
      try {
        await app.inject({ url: '/emails/logs', headers: { 'x-request-id': 'req-42' } });
        expect(lines.join('')).toContain('req-42');
      } finally {
        await app.close();
      }
    });

    it('serves a resource from the repository it is given, not from the pool', async () => {
      const template = {
        id: 'tpl_given',
        name: 'Given',
        subject: 'Hello',
        html: null,
        text: 'Hi',
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
      };
      const asked: unknown[][] = [];
      const unused = async () => {
        throw new Error('not used by this test');
      };
      const templates: ApiStores['templates'] = {
        get: async (...args) => {
          asked.push(args);
          return template;
        },
        insert: unused,
        replace: unused,
        list: unused,
        delete: unused,
        names: unused,
      };
      const app = await build({ data: { stores: { templates } } });
      try {
        const res = await getAsOwner(app, '/templates/tpl_given');
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual(template);
        expect(asked).toEqual([['acme', 'tpl_given']]);
      } finally {
        await app.close();
      }
    });

    it('reads a tenant’s settings from the repository it is given', async () => {
      const asked: string[] = [];
      const unused = async () => {
        throw new Error('not used by this test');
      };
      const tenantSettings: ApiStores['tenantSettings'] = {
        getRetention: async (tenantId) => {
          asked.push(`retention ${tenantId}`);
          return 30;
        },
        getTracking: async (tenantId) => {
          asked.push(`tracking ${tenantId}`);
          return { opens: false, clicks: true };
        },
        getSendRate: async (tenantId) => {
          asked.push(`rate ${tenantId}`);
          return null;
        },
        getTimeZone: async (tenantId) => {
          asked.push(`time zone ${tenantId}`);
          return 'Europe/Paris';
        },
        setRetention: unused,
        setTracking: unused,
        setSendRate: unused,
        setTimeZone: unused,
      };
      const app = await build({ data: { stores: { tenantSettings } } });
      try {
        const res = await getAsOwner(app, '/tenants/acme/settings');
        expect(res.statusCode).toBe(200);
        expect(res.json()).toMatchObject({
          retentionDays: 30,
          defaultRetentionDays: 90,
          tracking: { opens: false, clicks: true },
          sendRatePerSecond: null,
          timeZone: 'Europe/Paris',
        });
        expect(asked).toEqual(['retention acme', 'tracking acme', 'rate acme', 'time zone acme']);
      } finally {
        await app.close();
      }
    });

    it('refuses a key cache TTL over 5 s (revocations must apply within 5 s)', async () => {
      await expect(build({ limits: { keyCacheTtlMs: 5001 } })).rejects.toThrow(/keyCacheTtlMs/);
    });

    it('refuses a retention that is not a positive whole number of days', async () => {
      for (const retentionDays of [0, 1.5])
        await expect(build({ policy: { retentionDays } })).rejects.toThrow(
          'retentionDays must be a positive integer',
        );
    });
  });
});

describe('resource ids', () => {
  const C = new Intl.Collator('en-US');
  const ID = /^em_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20}$/;

  it('an id made later sorts after, in byte order and in a locale’s order; 20 random base62 characters follow', () => {
    const at = fc.integer({ min: 0, max: 2 ** 48 - 2 });
    fc.assert(
      fc.property(at, fc.integer({ min: 1, max: 2 ** 40 }), (t, dt) => {
        const a = newResourceId('email', t);
        const b = newResourceId('email', Math.min(2 ** 48 - 1, t + dt));
        expect(a).toMatch(ID);
        expect(b).toMatch(ID);
        expect(a < b).toBe(true);
        expect(C.compare(a, b)).toBeLessThan(0);
      }),
      { numRuns: 500 },
    );
  });

  it('ids of the same millisecond differ, and the time they carry is their creation time', () => {
    const at = Date.UTC(2026, 11, 6, 9, 0, 0, 123);
    const ids = new Set(Array.from({ length: 1000 }, () => newResourceId('email', at)));
    expect(ids.size).toBe(1000);
    const [one] = ids;
    // Crockford base32, most significant first (a ULID's time part).
    const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    const ms = [...one!.slice(3, 13)].reduce((n, c) => n * 32 + alphabet.indexOf(c), 0);
    expect(ms).toBe(at);
    expect(newResourceId('template')).toMatch(/^tpl_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20}$/);
  });
});

describe('the API reference (docs/api.md)', () => {
  // docs/api.md is generated from the OpenAPI document; this fails when a route changed and the
  // file was not regenerated (`npm run docs:api`), or when a route lacks what the reference shows.

  let doc: OpenApiDocument;

  beforeAll(async () => {
    doc = await referenceDocument();
  });

  describe('docs/api.md', () => {
    it('is what `npm run docs:api` generates from the current routes', async () => {
      const onDisk = await readFile(new URL('../../../../docs/api.md', import.meta.url), 'utf8');
      expect(onDisk, 'docs/api.md is stale: run `npm run docs:api`').toBe(renderApiReference(doc));
    });

    it('covers every route with its credential, an example request and an example of every answer with a body', () => {
      const reference = renderApiReference(doc);
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          const heading = `### \`${method.toUpperCase()} ${path}\``;
          expect(reference, heading).toContain(heading);
          const section = reference.slice(reference.indexOf(heading)).split('\n### ')[0]!;
          expect(op[CREDENTIAL_EXTENSION], heading).toBeTruthy();
          expect(section).toContain(`curl -X ${method.toUpperCase()} "$TERN_URL`);
          expect(section).not.toMatch(/\$TERN_URL[^"]*\{/); // every path parameter has an example
          if (op.requestBody) expect(section, `${heading} body`).toMatch(/(-d|--data-binary) '/);
          for (const [status, response] of Object.entries(op.responses ?? {})) {
            if (!response.content) continue;
            const after = section.slice(section.indexOf(`- **${status}**`));
            expect(after.split('\n- **')[0], `${heading} ${status}`).toMatch(/```(json|text)\n/);
          }
        }
      }
    });

    it('documents POST /events (ingest) beside the generated part, with an example ingest accepts', () => {
      expect(renderApiReference(doc)).toContain('### `POST /events`');
      expect(validateEvents(INGEST_EXAMPLE.events)).toMatchObject({ ok: true });
    });

    it('shows the credential rule from the route config', () => {
      const reference = renderApiReference(doc);
      expect(reference).toContain('API key with `templates:read`, or a dashboard JWT (any role).');
      expect(reference).toContain('every API key gets 403 `Missing required API key scope`');
      expect(reference).toContain(
        'Dashboard JWT of the tenant in `:id` (role owner or admin); API keys get 403.',
      );
    });
  });
});

describe('the OpenAPI document', () => {
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
      data: unreachableStores(),
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
          const anyCredential =
            config?.auth === 'jwt_or_key' && config.scope === undefined && !config.denyKeys;
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
});
