import { createEventStream, createPostgresEventLog, type EventLog } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, closeAll, createKey, eventsOf, jwtFor, NOW, pct, project, testApp } from '../support.js';

/**
 * Fuzz of every documented route plus `POST /events` (issue 9): malformed JSON, wrong types,
 * huge and deep bodies, NUL and lone surrogates, injection strings, duplicate parameters and
 * header tricks. Fixed budget and seed (FUZZ_RUNS, FUZZ_SEED): never a 5xx, the process keeps
 * answering, and a property shows that no tenant ever reads another's data.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const INGEST_TOKEN = 'fuzz-ingest-token-0123456789abcdef';
const file = testApp('fuzz', { limits: { rateLimit: false } });
const { clock, run, A, B } = file;
/**
 * Strings only tenant B's data holds, never sent by A's requests (an error message may echo what
 * A sent, which is no leak): any of them in an answer to A is a leak.
 */
const B_MARKERS = [`b-only-${run}@example.com`, `Subject of B ${run}`, `tag-b-${run}`, `Key of B ${run}`];

let ingest: FastifyInstance;
let log: EventLog;
let routes: { method: string; url: string }[] = [];
const creds: Record<string, Record<string, string>> = {};

const NASTY = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff',
  '😀',
  "' OR 1=1 --",
  '"; DROP TABLE email_logs; --',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the injection string itself
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '%00',
  '%2e%2e%2f',
  ' ',
  '',
  'x'.repeat(5000),
  '-1',
  '1e309',
  'NaN',
  'null',
  '[]',
  '{}',
  '0x10',
  '9'.repeat(40),
  '2026-13-45T99:99:99Z',
  '0000-01-01T00:00:00Z',
  B,
  `secret-b-${run}`,
];

const nasty = fc.oneof(
  fc.constantFrom(...NASTY),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    nasty,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(
        nasty,
        fc.constantFrom('name', 'scopes', 'events', 'expiresAt', 'retentionDays', '__proto__', 'constructor'),
      ),
      tie('value'),
      { maxKeys: 4 },
    ),
  ),
})).value;
const deep = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const body = fc.oneof(
  jsonValue.map((v) => JSON.stringify(v)),
  fc.constantFrom(
    '{',
    '{"a":',
    'nul',
    '\u0000',
    '{"name":"a\\u0000b","scopes":["email:read"]}',
    '{"events":[{"id":"x"}]}',
    deep(2000),
    `{"x":"${'y'.repeat(1_100_000)}"}`,
    '{"__proto__":{"admin":true}}',
  ),
  fc.string({ maxLength: 200 }),
);
const credential = fc.constantFrom(
  'jwtA',
  'keyA',
  'none',
  'garbage',
  'jwtB',
  'keyB',
  'twoHeaders',
  'badScheme',
  'expiredLike',
  'arrayHeader',
);
const query = fc.array(
  fc.tuple(
    fc.constantFrom('limit', 'page', 'period', 'status', 'from', 'to', 'q', 'tag', 'cursor', 'limit', 'x'),
    nasty,
  ),
  { maxLength: 5 },
);

function headersFor(kind: string): Record<string, string | string[]> {
  switch (kind) {
    case 'none':
      return {};
    case 'garbage':
      return { authorization: 'Bearer not-a-token', 'x-api-key': 'nope' };
    case 'twoHeaders':
      return { ...creds.jwtA!, 'x-api-key': creds.keyB!['x-api-key']! };
    case 'badScheme':
      return { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` };
    case 'expiredLike':
      return { authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJ0ZW5hbnRJZCI6IngiLCJleHAiOjF9.' };
    case 'arrayHeader':
      return { 'x-api-key': [creds.keyA!['x-api-key']!, creds.keyB!['x-api-key']!] };
    default:
      return creds[kind]!;
  }
}

/** A concrete URL for a route template: each `:param` is a nasty string or a real tenant id. */
function fill(template: string, values: string[], q: [string, string][]): string {
  let i = 0;
  const path = template.replace(/:[A-Za-z]+/g, () => pct(values[i++ % values.length] ?? 'x'));
  const search = q.map(([k, v]) => `${k}=${pct(v)}`).join('&');
  return search ? `${path}?${search}` : path;
}

beforeAll(async () => {
  const pgLog = createPostgresEventLog({ pool: file.stores.pool, table: `fuzz_log_${run}` });
  await pgLog.ensureSchema();
  log = pgLog;
  ingest = await createIngestApp({ log: createEventStream(log), ingestToken: INGEST_TOKEN });
  const ownerA = jwtFor(clock, A);
  const ownerB = jwtFor(clock, B);
  creds.jwtA = bearer(ownerA);
  creds.jwtB = bearer(ownerB);
  creds.keyA = {
    'x-api-key': (await createKey(file.app, ownerA, A, { scopes: ['email:read'] })).key,
  };
  creds.keyB = {
    'x-api-key': (await createKey(file.app, ownerB, B, { scopes: ['email:read'], name: `Key of B ${run}` }))
      .key,
  };
  const day = new Date(Date.parse(NOW) - 2 * 86_400_000).toISOString();
  await project(file.stores, [
    ...eventsOf(A, `a-mail-${run}`, [
      {
        type: 'email.queued',
        occurredAt: day,
        data: { toEmail: 'a@example.com', subject: 'Subject of A', tags: ['a'] },
      },
    ]),
    ...eventsOf(B, `secret-b-${run}`, [
      {
        type: 'email.queued',
        occurredAt: day,
        data: {
          toEmail: `b-only-${run}@example.com`,
          subject: `Subject of B ${run}`,
          tags: [`tag-b-${run}`],
          templateId: `secret-b-${run}`,
        },
      },
    ]),
  ]);
  await file.stores.pool.query(
    'INSERT INTO templates (tenant_id, id, name, subject) VALUES ($1, $2, $3, $4)',
    [B, `secret-b-${run}`, `tag-b-${run}`, `Subject of B ${run}`],
  );
  const doc = (await file.app.inject('/docs/json')).json() as {
    paths: Record<string, Record<string, { responses?: Record<string, { content?: object }> }>>;
  };
  // A live tail (`GET /events/stream`) never ends, so `inject` would wait for ever: it is fuzzed
  // over a real socket in fuzz-http.int.test.ts and events.int.test.ts.
  const endless = (op: { responses?: Record<string, { content?: object }> }) =>
    Object.keys(op.responses?.['200']?.content ?? {}).includes('text/event-stream');
  routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([, op]) => !endless(op))
      .map(([method]) => ({
        method: method.toUpperCase(),
        url: path.replace(/\{(\w+)\}/g, ':$1'),
      })),
  );
}, 120_000);

afterAll(() => closeAll(ingest, log));

describe('fuzz', () => {
  it('finds the documented routes', () => {
    expect(routes.length).toBeGreaterThanOrEqual(8);
    expect(routes.some((r) => r.url.includes(':'))).toBe(true);
  });

  it(`no input makes any route answer 5xx (${RUNS} runs, seed ${SEED})`, async () => {
    const seen: Record<number, number> = {};
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: 10_000 }),
        fc.array(nasty, { minLength: 1, maxLength: 3 }),
        query,
        body,
        credential,
        fc.constantFrom(
          'application/json',
          'text/plain',
          'application/json; charset=latin1',
          'application/x-www-form-urlencoded',
          '',
        ),
        async (pick, params, q, payload, cred, contentType) => {
          const route = routes[pick % routes.length]!;
          const url = fill(route.url, params, q);
          const res = await file.app.inject({
            method: route.method as 'GET',
            url,
            headers: { ...headersFor(cred), ...(contentType ? { 'content-type': contentType } : {}) },
            ...(route.method === 'GET' || route.method === 'DELETE' ? {} : { payload }),
          });
          seen[res.statusCode] = (seen[res.statusCode] ?? 0) + 1;
          if (res.statusCode >= 500)
            throw new Error(
              `${route.method} ${url.slice(0, 200)} → ${res.statusCode} ${res.body.slice(0, 300)}`,
            );
        },
      ),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    console.log(`[fuzz] api statuses ${JSON.stringify(seen)}`);
    // The process keeps answering.
    expect((await file.app.inject('/health')).statusCode).toBe(200);
    expect((await file.app.inject({ url: '/emails/logs', headers: creds.keyA! })).statusCode).toBe(200);
  });

  it(`no body makes POST /events answer 5xx, and nothing invalid is appended (${RUNS} runs)`, async () => {
    const seen: Record<number, number> = {};
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom('good', 'none', 'bad', 'lower'), async (payload, token) => {
        const authorization = {
          good: `Bearer ${INGEST_TOKEN}`,
          lower: `bearer ${INGEST_TOKEN}`,
          bad: 'Bearer nope',
          none: undefined,
        }[token];
        const res = await ingest.inject({
          method: 'POST',
          url: '/events',
          headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
          payload,
        });
        seen[res.statusCode] = (seen[res.statusCode] ?? 0) + 1;
        if (res.statusCode >= 500)
          throw new Error(`POST /events → ${res.statusCode} ${res.body.slice(0, 300)}`);
        if (token === 'none' || token === 'bad') expect(res.statusCode).toBe(401);
      }),
      { numRuns: RUNS, seed: SEED + 1, endOnFailure: true },
    );
    console.log(`[fuzz] ingest statuses ${JSON.stringify(seen)}`);
    expect((await ingest.inject('/health')).statusCode).toBe(200);
  });

  it(`property: tenant A never sees tenant B's data, whatever the route and parameters (${RUNS} runs)`, async () => {
    const reads = routes.filter((r) => r.method === 'GET');
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: 10_000 }),
        fc.array(fc.oneof(fc.constantFrom(A, B, `secret-b-${run}`, `a-mail-${run}`), nasty), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.array(
          fc.tuple(
            fc.constantFrom('limit', 'period', 'q', 'tag', 'status', 'from', 'to', 'tenantId', 'tenant'),
            fc.oneof(fc.constantFrom(B, `secret-b-${run}`, '100', '7d', '30d'), nasty),
          ),
          { maxLength: 4 },
        ),
        fc.constantFrom('jwtA', 'keyA'),
        async (pick, params, q, cred) => {
          const route = reads[pick % reads.length]!;
          const url = fill(route.url, params, q);
          const res = await file.app.inject({ method: 'GET', url, headers: headersFor(cred) });
          expect(res.statusCode).toBeLessThan(500);
          for (const marker of B_MARKERS) {
            if (res.body.includes(marker))
              throw new Error(`${url} as ${cred} answered ${res.statusCode} with B's ${marker}`);
          }
        },
      ),
      { numRuns: RUNS, seed: SEED + 2, endOnFailure: true },
    );
    // The property can fail: B's own credential does see its data through the same routes.
    const own = await file.app.inject({ url: '/emails/logs', headers: creds.keyB! });
    expect(own.body).toContain(`b-only-${run}@example.com`);
  });
});
