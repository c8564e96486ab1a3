import { createEventStream, createPostgresEventLog, type EventLog } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSendingWorld, type SendingWorld, wallClock } from '../sending-support.js';
import {
  bearer,
  closeAll,
  createKey,
  eventsOf,
  jwtFor,
  NOW,
  pct,
  project,
  suffix,
  testApp,
} from '../support.js';

describe('fuzz of every route', () => {
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
          fc.constantFrom(
            'name',
            'scopes',
            'events',
            'expiresAt',
            'retentionDays',
            '__proto__',
            'constructor',
          ),
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
});

describe('fuzz over a real socket', () => {
  /**
   * Issue 24, item 4: client mistakes answered with 500 — seen only over a real socket (`inject`
   * hides a stream aborted mid-body) or deep in the send path (a ZodError of the event, 22P02 of
   * jsonb). Every request here goes through a listening server (127.0.0.1, ephemeral port) with
   * `fetch`: the explicit cases of the issue, then a fuzz of every documented route built from its
   * own OpenAPI example with one field replaced by a bad value. Bounded: FUZZ_HTTP_RUNS requests
   * (default 300) and 90 s.
   */
  const RUNS = Number(process.env.FUZZ_HTTP_RUNS ?? 300);
  const SEED = Number(process.env.FUZZ_SEED ?? 20261125);
  const A = `fuzz-http-${suffix()}`;

  let world: SendingWorld;
  let base: string;
  let owner: string;

  type Answer = { status: number; body: string; json: () => { code?: string; message?: string } };

  async function call(
    method: string,
    path: string,
    opts: {
      body?: string | Uint8Array<ArrayBuffer>;
      contentType?: string;
      headers?: Record<string, string>;
    } = {},
  ): Promise<Answer> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...bearer(owner),
        ...(opts.body !== undefined ? { 'content-type': opts.contentType ?? 'application/json' } : {}),
        ...opts.headers,
      },
      ...(opts.body !== undefined ? { body: opts.body } : {}),
      signal: AbortSignal.timeout(20_000),
    });
    // A live tail (`GET /events/stream`) answers with its headers and never ends: its status is the answer.
    if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      await res.body?.cancel();
      return { status: res.status, body: '', json: () => ({}) };
    }
    const body = await res.text();
    return { status: res.status, body, json: () => JSON.parse(body) };
  }

  const json = (method: string, path: string, value: unknown) =>
    call(method, path, { body: JSON.stringify(value) });

  beforeAll(async () => {
    world = await openSendingWorld({ sender: false });
    await world.app.listen({ host: '127.0.0.1', port: 0 });
    const address = world.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    base = `http://127.0.0.1:${address.port}`;
    owner = jwtFor(wallClock, A, 'owner');
  }, 120_000);

  afterAll(async () => {
    await world?.close();
  });

  const SEND = { from: 'Acme <hello@acme.test>', to: 'ada@example.com', subject: 'Hi', text: 'Hello' };
  const NUL = 'a\u0000b';
  const LONE = 'a\uD800b';

  /** A 400 with a code of the contract (not a 500, not a reset connection). */
  function expect400(res: Answer, field?: string) {
    expect(res.status, res.body).toBe(400);
    const body = res.json();
    expect(body.code).toMatch(/^[A-Z_]+$/);
    if (field) expect(body.message).toContain(field);
  }

  describe('U+0000 and lone surrogates → 400 with a code, over a real socket', () => {
    for (const [name, bad] of [
      ['U+0000', NUL],
      ['a lone surrogate', LONE],
    ] as const) {
      it(`POST /emails/send: ${name} in subject, tags, from name, html, text, header`, async () => {
        expect400(await json('POST', '/emails/send', { ...SEND, subject: bad }), 'subject');
        expect400(await json('POST', '/emails/send', { ...SEND, tags: [bad] }), 'tags');
        expect400(await json('POST', '/emails/send', { ...SEND, from: `${bad} <hello@acme.test>` }), 'from');
        expect400(await json('POST', '/emails/send', { ...SEND, html: `<p>${bad}</p>` }), 'html');
        expect400(await json('POST', '/emails/send', { ...SEND, text: bad }), 'text');
        expect400(await json('POST', '/emails/send', { ...SEND, headers: { 'X-Campaign': bad } }), 'headers');
        expect400(await json('POST', '/emails/batch', [SEND, { ...SEND, subject: bad }]), 'subject');
      });

      it(`POST /contacts and /templates: ${name} in attributes, names, subject`, async () => {
        const email = `c-${suffix()}@example.com`;
        expect400(await json('POST', '/contacts', { email, attributes: { plan: bad } }), 'attributes');
        expect400(await json('POST', '/contacts', { email, firstName: bad }), 'firstName');
        expect400(await json('POST', '/templates', { name: 't', subject: bad, html: '<p>x</p>' }), 'subject');
      });
    }

    it('a template subject rendered over 998 characters, cut inside an emoji: sent (cut before it), not 500', async () => {
      const created = await json('POST', '/templates', {
        name: `t-${suffix()}`,
        subject: '{{x}}',
        text: 'Hi',
      });
      expect(created.status, created.body).toBe(201);
      const templateId = (created.json() as unknown as { id: string }).id;
      const res = await json('POST', '/emails/send', {
        from: SEND.from,
        to: SEND.to,
        templateId,
        variables: { x: `${'a'.repeat(997)}\u{1F600}` },
      });
      expect(res.status, res.body).toBe(202);
    });
  });

  describe('from and reserved headers → 400 over a real socket (issue 24, item 9)', () => {
    it('refuses a from that is not one mailbox and an X-Tern-Email-Id header in any case', async () => {
      for (const from of ['a@evil.test, <hello@acme.test>', 'a@evil.test <hello@acme.test>'])
        expect400(await json('POST', '/emails/send', { ...SEND, from }), 'from');
      for (const name of ['x-tern-email-id', 'X-TERN-EMAIL-ID'])
        expect400(
          await json('POST', '/emails/send', { ...SEND, headers: { [name]: 'em_spoof' } }),
          'headers',
        );
      expect(
        (await json('POST', '/emails/send', { ...SEND, from: '"Acme, Inc." <hello@acme.test>' })).status,
      ).toBe(202);
    });
  });

  describe('a subject with a line break → 400 (issue 24, item 15)', () => {
    it('refuses CR, LF and CRLF in subject on send and batch', async () => {
      for (const subject of ['Hello\r\nBcc: victim@example.com', 'Hello\nX-Evil: 1', 'Hello\rthere']) {
        const one = await json('POST', '/emails/send', { ...SEND, subject });
        expect400(one, 'subject must not contain line breaks');
        expect(one.json().code).toBe('FST_ERR_VALIDATION');
        expect400(await json('POST', '/emails/batch', [SEND, { ...SEND, subject }]), 'body.1.subject');
      }
      expect((await json('POST', '/emails/send', { ...SEND, subject: 'Hello there' })).status).toBe(202);
    });
  });

  describe('CSV import: header mistakes → 400 INVALID_CSV over a real socket', () => {
    const csv = (text: string) => call('POST', '/contacts/import', { body: text, contentType: 'text/csv' });
    for (const [name, text] of [
      ['no email column', 'first_name,last_name\nAda,Lovelace\n'],
      ['an unknown column', 'email,shoe_size\nada@example.com,42\n'],
      ['a repeated column', 'email,email\nada@example.com,ada@example.com\n'],
      ['an empty header', '\nada@example.com\n'],
    ] as const) {
      it(name, async () => {
        const rows = Array.from({ length: 2000 }, (_, i) => `x${i}@example.com,y`).join('\n');
        for (const body of [text, `${text}${rows}\n`]) {
          const res = await csv(body);
          expect(res.status, res.body).toBe(400);
          expect(res.json().code).toBe('INVALID_CSV');
        }
      });
    }
  });

  // --- Fuzz of every documented route over real HTTP ------------------------------------------

  type Operation = { method: string; path: string; example: unknown; query: string[] };

  const NASTY: unknown[] = [
    '\u0000',
    NUL,
    '\uD800',
    LONE,
    '\uDFFFx',
    `${'a'.repeat(997)}\u{1F600}`,
    'Hello\r\nBcc: x@evil.test',
    '=HYPERLINK("http://evil.test")',
    '"; DROP TABLE contacts; --',
    'x'.repeat(5000),
    '',
    ' ',
    '日本€',
    '../../etc/passwd',
    '2026-13-45T99:99:99Z',
    'a@evil.test, <hello@acme.test>',
    -1,
    Number.POSITIVE_INFINITY,
    Number.MAX_SAFE_INTEGER + 2,
    0.5,
    true,
    null,
    [],
    {},
    [null],
    { __proto__: { admin: true } },
  ];

  /** Bodies for the operations whose document has no example. */
  const FALLBACK_BODIES: Record<string, unknown> = {
    'POST /contacts': {
      email: 'ada@example.com',
      firstName: 'Ada',
      attributes: { plan: 'pro' },
      audiences: ['news'],
    },
    'PATCH /contacts/{id}': { firstName: 'Ada', attributes: { plan: 'pro' } },
    'POST /contacts/erase': { email: 'ada@example.com' },
    'POST /sequences/{id}/enrollments': { contactId: 'ct_x' },
  };

  function operations(doc: {
    paths: Record<
      string,
      Record<
        string,
        {
          requestBody?: { content?: Record<string, Record<string, unknown>> };
          parameters?: { in: string; name: string }[];
        }
      >
    >;
  }): Operation[] {
    return Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => {
        const content = op.requestBody?.content?.['application/json'];
        const schema = content?.schema as { example?: unknown; examples?: unknown[] } | undefined;
        const named = content?.examples as Record<string, { value?: unknown }> | undefined;
        const example =
          content?.example ??
          (named ? Object.values(named)[0]?.value : undefined) ??
          schema?.example ??
          schema?.examples?.[0] ??
          FALLBACK_BODIES[`${method.toUpperCase()} ${path}`];
        return {
          method: method.toUpperCase(),
          path,
          example,
          query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        };
      }),
    );
  }

  /** Every path to a leaf (or a whole sub-value) of an example body. */
  function leafPaths(value: unknown, path: (string | number)[] = []): (string | number)[][] {
    const here = [path];
    if (Array.isArray(value)) return [...here, ...value.flatMap((v, i) => leafPaths(v, [...path, i]))];
    if (value !== null && typeof value === 'object')
      return [...here, ...Object.entries(value).flatMap(([k, v]) => leafPaths(v, [...path, k]))];
    return here;
  }

  function replaceAt(value: unknown, path: (string | number)[], next: unknown): unknown {
    if (path.length === 0) return next;
    const [head, ...rest] = path;
    if (Array.isArray(value)) return value.map((v, i) => (i === head ? replaceAt(v, rest, next) : v));
    const obj = value as Record<string, unknown>;
    return { ...obj, [head as string]: replaceAt(obj[head as string], rest, next) };
  }

  describe('fuzz over real HTTP', () => {
    let ops: Operation[] = [];
    let ids: string[] = [];

    beforeAll(async () => {
      ops = operations(JSON.parse((await call('GET', '/docs/json')).body));
      const make = async (path: string, body: unknown) => {
        const res = await json('POST', path, body);
        return res.status < 300 ? ((res.json() as unknown as { id?: string }).id ?? null) : null;
      };
      const made = await Promise.all([
        make('/templates', { name: `fz-${suffix()}`, subject: 'Hi {{firstName}}', html: '<p>x</p>' }),
        make('/contacts', { email: `fz-${suffix()}@example.com`, audiences: ['news'] }),
        make('/projects', { name: `fz-${suffix()}` }),
        make('/campaigns', {
          name: 'c',
          from: 'news@acme.test',
          audience: 'news',
          subject: 'Hi',
          html: '<p>x</p>',
        }),
        make('/emails/send', SEND),
      ]);
      ids = made.filter((id): id is string => id !== null);
      expect(ids.length).toBeGreaterThanOrEqual(4);
    }, 60_000);

    it('reads every documented route from the live document', () => {
      expect(ops.length).toBeGreaterThanOrEqual(60);
      expect(ops.filter((o) => o.example !== undefined).length).toBeGreaterThanOrEqual(20);
    });

    it(`no bad input makes any route answer 5xx: each field of each route, then ${RUNS} random requests (seed ${SEED})`, async () => {
      const deadline = Date.now() + 90_000;
      const statuses: Record<number, number> = {};
      const failures: string[] = [];
      const send = async (
        op: Operation,
        param: string,
        q: [string, string][],
        payload: string | Uint8Array<ArrayBuffer> | undefined,
      ) => {
        const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) =>
          pct(name === 'id' && op.path.startsWith('/tenants/') && param === '' ? A : param),
        );
        const search = q.map(([k, v]) => `${k}=${pct(v)}`).join('&');
        const url = search ? `${path}?${search}` : path;
        const contentType = op.path === '/contacts/import' ? 'text/csv' : 'application/json';
        let res: Answer;
        try {
          res = await call(op.method, url, payload === undefined ? {} : { body: payload, contentType });
        } catch (error) {
          failures.push(`${op.method} ${url.slice(0, 120)} → connection error ${(error as Error).message}`);
          return;
        }
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        if (res.status >= 500)
          failures.push(`${op.method} ${url.slice(0, 120)} → ${res.status} ${res.body.slice(0, 200)}`);
      };
      const hasBody = (op: Operation) => op.method !== 'GET' && op.method !== 'DELETE';

      // Each route, and each field of its example body in turn, with U+0000 and a lone surrogate.
      for (const op of ops) {
        const example = op.example ?? {};
        const leaves = hasBody(op) ? leafPaths(example).filter((p) => p.length > 0) : [[]];
        for (const leaf of leaves.length > 0 ? leaves : [[]])
          for (const bad of [NUL, LONE]) {
            const body = hasBody(op) ? JSON.stringify(replaceAt(example, leaf, bad)) : undefined;
            await send(
              op,
              ids[0] ?? 'x',
              op.query.map((q) => [q, bad]),
              body,
            );
          }
      }
      const systematic = Object.values(statuses).reduce((a, b) => a + b, 0);

      await fc.assert(
        fc.asyncProperty(
          fc.nat({ max: 10_000 }),
          fc.nat({ max: 10_000 }),
          fc.oneof(
            fc.constantFrom(...NASTY),
            fc.string({ maxLength: 30 }),
            fc.string({ unit: 'binary', maxLength: 12 }),
          ),
          fc.oneof(
            fc.constantFrom('', ...ids),
            fc.constantFrom('\u0000', '\uD800', 'x'.repeat(300), '%', '..'),
          ),
          fc.array(
            fc.tuple(
              fc.nat({ max: 10 }),
              fc.oneof(fc.constantFrom('1', '-1', 'abc', NUL, LONE, '', '1e309')),
              fc.string({ maxLength: 8 }),
            ),
            { maxLength: 3 },
          ),
          fc.constantFrom('leaf', 'leaf', 'leaf', 'extra', 'raw', 'whole'),
          async (pickOp, pickLeaf, bad, param, query, mode) => {
            if (Date.now() > deadline) return;
            const op = ops[pickOp % ops.length]!;
            const example = op.example ?? {};
            const leaves = leafPaths(example);
            let payload: string | Uint8Array<ArrayBuffer> | undefined;
            if (hasBody(op)) {
              if (mode === 'leaf')
                payload = JSON.stringify(replaceAt(example, leaves[pickLeaf % leaves.length]!, bad));
              else if (mode === 'extra')
                payload = JSON.stringify(
                  Array.isArray(example) ? [...example, bad] : { ...(example as object), [String(bad)]: bad },
                );
              else if (mode === 'whole') payload = JSON.stringify(bad) ?? 'null';
              else
                payload = new Uint8Array([
                  0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0xff, 0x22, 0x7d,
                ]);
            }
            const q = query.map(([i, v]): [string, string] => [
              op.query[i % Math.max(op.query.length, 1)] ?? 'x',
              v,
            ]);
            await send(op, param, q, payload);
          },
        ),
        { numRuns: RUNS, seed: SEED },
      );
      console.log(
        `[fuzz-http] ${ops.length} routes, ${systematic} systematic requests, statuses ${JSON.stringify(statuses)}`,
      );
      expect(failures).toEqual([]);
      // The server still answers.
      expect((await call('GET', '/health')).status).toBe(200);
      expect((await call('GET', '/emails/logs')).status).toBe(200);
    }, 150_000);
  });
});
