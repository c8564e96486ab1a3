import { MISSING_SCOPE_MESSAGE as CONTRACT_MISSING_SCOPE } from '@tern/contracts';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTernClient } from '../src/client.js';
import { type FetchLike, resolveConfig, type TernOptions } from '../src/config.js';
import { MISSING_SCOPE_MESSAGE } from '../src/constants.js';
import {
  init,
  isTernApiError,
  type LogsResponse,
  TernApiError,
  TernConfigError,
  TernTimeoutError,
} from '../src/index.js';
import { backoffDelayMs, isRetryableStatus, parseRetryAfter, retryDelayMs } from '../src/retry.js';
import { type ClientDeps, errorFromResponse } from '../src/transport.js';

const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const policy = { baseDelayMs: 500, maxDelayMs: 30_000 };

describe('backoffDelayMs (full jitter)', () => {
  it('draws uniformly below base · 2^retry', () => {
    expect(backoffDelayMs(0, policy, () => 0)).toBe(0);
    expect(backoffDelayMs(0, policy, () => 0.5)).toBe(250);
    expect(backoffDelayMs(0, policy, () => 0.999_999)).toBe(499);
    expect(backoffDelayMs(1, policy, () => 0.5)).toBe(500);
    expect(backoffDelayMs(3, policy, () => 0.5)).toBe(2000);
  });

  it('never exceeds maxDelayMs however many retries', () => {
    expect(backoffDelayMs(20, policy, () => 0.999_999)).toBe(29_999);
    expect(backoffDelayMs(2000, policy, () => 0.5)).toBe(15_000);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('1', NOW)).toBe(1000);
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
  });

  it('reads an HTTP date relative to now, never negative', () => {
    expect(parseRetryAfter('Sun, 01 Jun 2025 12:00:05 GMT', NOW)).toBe(5000);
    expect(parseRetryAfter('Sun, 01 Jun 2025 11:00:00 GMT', NOW)).toBe(0);
  });

  it('ignores absent or unreadable values', () => {
    expect(parseRetryAfter(null, NOW)).toBeUndefined();
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter('', NOW)).toBeUndefined();
    expect(parseRetryAfter('-1', NOW)).toBeUndefined();
    expect(parseRetryAfter('1.5', NOW)).toBeUndefined();
    expect(parseRetryAfter('soon', NOW)).toBeUndefined();
  });
});

describe('retryDelayMs', () => {
  it("prefers the server's Retry-After, capped at maxDelayMs", () => {
    expect(retryDelayMs(0, 1000, policy, () => 0.5)).toBe(1000);
    expect(retryDelayMs(0, 3_600_000, policy, () => 0.5)).toBe(30_000);
    expect(retryDelayMs(0, 0, policy, () => 0.5)).toBe(0);
  });

  it('falls back to jittered back-off without it', () => {
    expect(retryDelayMs(1, undefined, policy, () => 0.5)).toBe(500);
  });
});

describe('isRetryableStatus', () => {
  it('retries 429 and every 5xx', () => {
    for (const s of [429, 500, 502, 503, 504, 599]) expect(isRetryableStatus(s)).toBe(true);
  });

  it('never retries other 4xx (nor success)', () => {
    for (const s of [200, 204, 400, 401, 403, 404, 408, 409, 413, 422])
      expect(isRetryableStatus(s)).toBe(false);
  });
});

describe('error classification', () => {
  const headers = (h: Record<string, string> = {}) => new Headers(h);
  const body = (statusCode: number, error: string, message: string, code?: string) =>
    JSON.stringify({ statusCode, error, message, ...(code ? { code } : {}) });

  it('keeps the same missing-scope text as the contract', () => {
    expect(MISSING_SCOPE_MESSAGE).toBe(CONTRACT_MISSING_SCOPE);
  });

  it('tells a missing scope from other 403s', () => {
    const missing = errorFromResponse(
      403,
      'Forbidden',
      headers(),
      body(403, 'Forbidden', CONTRACT_MISSING_SCOPE),
      NOW,
    );
    expect(missing.isMissingScope).toBe(true);
    expect(missing.isUnauthorized).toBe(false);
    expect(missing.message).toBe('Missing required API key scope');

    const wrongTenant = errorFromResponse(
      403,
      'Forbidden',
      headers(),
      body(403, 'Forbidden', 'Wrong tenant'),
      NOW,
    );
    expect(wrongTenant.isMissingScope).toBe(false);
    expect(wrongTenant.status).toBe(403);
  });

  it('marks 401 as unauthorized and carries the body and its code', () => {
    const err = errorFromResponse(
      401,
      'Unauthorized',
      headers(),
      body(401, 'Unauthorized', 'Invalid API key', 'INVALID_CREDENTIAL'),
      NOW,
    );
    expect(err).toBeInstanceOf(TernApiError);
    expect(err.isUnauthorized).toBe(true);
    expect(err.isMissingScope).toBe(false);
    expect(err.message).toBe('Invalid API key');
    expect(err.code).toBe('INVALID_CREDENTIAL');
    expect(err.body).toEqual({
      statusCode: 401,
      error: 'Unauthorized',
      message: 'Invalid API key',
      code: 'INVALID_CREDENTIAL',
    });
  });

  it('keeps a non-JSON body as text and names the status', () => {
    const err = errorFromResponse(502, 'Bad Gateway', headers(), '<html>upstream down</html>', NOW);
    expect(err.status).toBe(502);
    expect(err.body).toBe('<html>upstream down</html>');
    expect(err.message).toBe('HTTP 502 Bad Gateway');
    expect(err.code).toBeUndefined();
  });

  it('reads Retry-After on a 429', () => {
    const err = errorFromResponse(
      429,
      'Too Many Requests',
      headers({ 'Retry-After': '7' }),
      body(429, 'Too Many Requests', 'Rate limit exceeded'),
      NOW,
    );
    expect(err.isRateLimited).toBe(true);
    expect(err.retryAfterMs).toBe(7000);
  });

  it('recognises SDK errors by name across bundle copies', () => {
    expect(isTernApiError(new TernTimeoutError(10))).toBe(true);
    const foreign = Object.assign(new Error('x'), { name: 'TernApiError', status: 500 });
    expect(isTernApiError(foreign)).toBe(true);
    expect(isTernApiError(new Error('x'))).toBe(false);
    expect(isTernApiError(new TernConfigError('x'))).toBe(false);
  });
});

describe('resolveConfig', () => {
  const f: FetchLike = async () => new Response('{}');

  it('takes apiKey from the options first, then TERN_API_KEY', () => {
    expect(resolveConfig({ apiKey: 'tern_a', fetch: f }, { TERN_API_KEY: 'tern_b' }).apiKey).toBe('tern_a');
    expect(resolveConfig({ fetch: f }, { TERN_API_KEY: 'tern_b' }).apiKey).toBe('tern_b');
  });

  it('throws a config error naming both ways when no key is found', () => {
    for (const options of [{}, { apiKey: '' }, { apiKey: '   ' }] satisfies TernOptions[]) {
      expect(() => resolveConfig(options, {})).toThrow(TernConfigError);
      expect(() => resolveConfig(options, { TERN_API_KEY: '' })).toThrow(
        /pass init\(\{ apiKey \}\).*TERN_API_KEY/,
      );
    }
  });

  it('defaults baseUrl to TERN_BASE_URL, then 127.0.0.1:3000, and trims trailing slashes', () => {
    expect(resolveConfig({ apiKey: 'k' }, {}).baseUrl).toBe('http://127.0.0.1:3000');
    expect(resolveConfig({ apiKey: 'k' }, { TERN_BASE_URL: 'https://t.example/api/' }).baseUrl).toBe(
      'https://t.example/api',
    );
    expect(
      resolveConfig({ apiKey: 'k', baseUrl: 'http://h:1//' }, { TERN_BASE_URL: 'http://x' }).baseUrl,
    ).toBe('http://h:1');
  });

  it('rejects a bad baseUrl and bad numbers', () => {
    expect(() => resolveConfig({ apiKey: 'k', baseUrl: 'not a url' }, {})).toThrow(/baseUrl/);
    expect(() => resolveConfig({ apiKey: 'k', baseUrl: 'ftp://h' }, {})).toThrow(/baseUrl/);
    expect(() => resolveConfig({ apiKey: 'k', baseUrl: 'http://h/?a=1' }, {})).toThrow(/query/);
    expect(() => resolveConfig({ apiKey: 'k', timeoutMs: 0 }, {})).toThrow(/timeoutMs/);
    expect(() => resolveConfig({ apiKey: 'k', maxRetries: 1.5 }, {})).toThrow(/maxRetries/);
    expect(() => resolveConfig({ apiKey: 'k', maxRetries: -1 }, {})).toThrow(/maxRetries/);
  });

  it('applies the documented defaults', () => {
    const c = resolveConfig({ apiKey: 'k' }, {});
    expect(c).toMatchObject({
      timeoutMs: 10_000,
      maxRetries: 2,
      retryBaseDelayMs: 500,
      maxRetryDelayMs: 30_000,
    });
    expect(typeof c.fetch).toBe('function');
  });
});

describe('init', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('reads TERN_API_KEY and TERN_BASE_URL from the process environment', () => {
    vi.stubEnv('TERN_API_KEY', 'tern_from_env');
    vi.stubEnv('TERN_BASE_URL', 'http://127.0.0.2:8080/');
    expect(init().baseUrl).toBe('http://127.0.0.2:8080');
  });

  it('throws TernConfigError at init, before any request, when no key is found', () => {
    vi.stubEnv('TERN_API_KEY', '');
    expect(() => init()).toThrow(TernConfigError);
  });
});

// ── Retry sequencing: a scripted fetch answers each attempt in turn. ─────────────────────────────

const page = (n = 1): LogsResponse => ({
  data: [
    {
      id: `e${n}`,
      toEmail: 'a@example.com',
      subject: 's',
      status: 'SENT',
      provider: 'ses',
      messageId: 'm',
      createdAt: '2025-06-01T00:00:00.000Z',
      tags: [],
      opened: false,
      clicked: false,
      complained: false,
    },
  ],
  meta: { page: n, limit: 1, total: 1, totalPages: 1 },
});

const json = (status: number, payload: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(payload), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

type Step = Response | Error | 'hang';

function scripted(steps: Step[]) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetch: FetchLike = (url, init) => {
    calls.push({ url, init });
    const step = steps.shift();
    if (step === undefined) throw new Error('unexpected extra request');
    if (step === 'hang') {
      // Never answers; settles only when the SDK aborts the attempt, like a stalled socket.
      return new Promise((_, reject) =>
        init.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError'))),
      );
    }
    return step instanceof Error ? Promise.reject(step) : Promise.resolve(step);
  };
  return { fetch, calls };
}

function fakeDeps() {
  const waits: number[] = [];
  const deps: ClientDeps = {
    sleep: (ms, signal) => {
      waits.push(ms);
      return signal?.aborted ? Promise.reject(signal.reason) : Promise.resolve();
    },
    random: () => 0.5,
    now: () => NOW,
  };
  return { deps, waits };
}

function client(steps: Step[], options: TernOptions = {}) {
  const s = scripted(steps);
  const d = fakeDeps();
  const c = createTernClient(resolveConfig({ apiKey: 'tern_test', fetch: s.fetch, ...options }, {}), d.deps);
  return { client: c, calls: s.calls, waits: d.waits };
}

const problem = (status: number, error: string, message: string) => ({ statusCode: status, error, message });

describe('getLogs retries', () => {
  it('sends the key as a bearer token and page/limit as the query', async () => {
    const { client: c, calls } = client([json(200, page())], { baseUrl: 'http://api.test/v/' });
    await expect(c.getLogs({ page: 2, limit: 5 })).resolves.toEqual(page());
    expect(calls).toHaveLength(1);
    expect(calls[0]?.url).toBe('http://api.test/v/emails/logs?page=2&limit=5');
    expect(calls[0]?.init.method).toBe('GET');
    expect(new Headers(calls[0]?.init.headers).get('authorization')).toBe('Bearer tern_test');
  });

  it('omits absent parameters so the server defaults apply', async () => {
    const { client: c, calls } = client([json(200, page())]);
    await c.getLogs();
    expect(calls[0]?.url).toBe('http://127.0.0.1:3000/emails/logs');
  });

  it('waits Retry-After on a 429, then succeeds', async () => {
    const {
      client: c,
      calls,
      waits,
    } = client([
      json(429, problem(429, 'Too Many Requests', 'Rate limit exceeded'), { 'retry-after': '1' }),
      json(200, page()),
    ]);
    await expect(c.getLogs()).resolves.toEqual(page());
    expect(calls).toHaveLength(2);
    expect(waits).toEqual([1000]);
  });

  it('backs off with jitter on a 503, then succeeds', async () => {
    const {
      client: c,
      calls,
      waits,
    } = client([json(503, problem(503, 'Service Unavailable', 'Not ready')), json(200, page())]);
    await expect(c.getLogs()).resolves.toEqual(page());
    expect(calls).toHaveLength(2);
    expect(waits).toEqual([250]); // 0.5 · 500 · 2^0
  });

  it('never retries a 400 and surfaces the server message', async () => {
    const {
      client: c,
      calls,
      waits,
    } = client([json(400, problem(400, 'Bad Request', 'limit must be ≤ 100'))]);
    const err = await c.getLogs({ limit: 500 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TernApiError);
    expect(err).toMatchObject({ status: 400, message: 'limit must be ≤ 100' });
    expect(calls).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('never retries 401 or 403', async () => {
    for (const [status, message] of [
      [401, 'Invalid API key'],
      [403, CONTRACT_MISSING_SCOPE],
    ] as const) {
      const { client: c, calls } = client([json(status, problem(status, 'x', message))]);
      await expect(c.getLogs()).rejects.toMatchObject({ status, message });
      expect(calls).toHaveLength(1);
    }
  });

  it('gives up after maxRetries and throws the last answer', async () => {
    const fail = () => json(500, problem(500, 'Internal Server Error', 'Internal Server Error'));
    const { client: c, calls, waits } = client([fail(), fail(), fail()]);
    await expect(c.getLogs()).rejects.toMatchObject({ status: 500, name: 'TernApiError' });
    expect(calls).toHaveLength(3);
    expect(waits).toEqual([250, 500]);
  });

  it('does not retry at all with maxRetries 0', async () => {
    const { client: c, calls } = client([json(503, problem(503, 'x', 'y'))], { maxRetries: 0 });
    await expect(c.getLogs()).rejects.toMatchObject({ status: 503 });
    expect(calls).toHaveLength(1);
  });

  it('retries network errors and reports status 0 with the cause', async () => {
    const boom = new TypeError('fetch failed');
    const ok = client([boom, json(200, page())]);
    await expect(ok.client.getLogs()).resolves.toEqual(page());
    expect(ok.calls).toHaveLength(2);

    const down = client([boom, boom, boom]);
    const err = await down.client.getLogs().catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 0, code: 'NETWORK_ERROR', isNetworkError: true });
    expect((err as Error).cause).toBe(boom);
    expect(down.calls).toHaveLength(3);
  });

  it('times out a stalled attempt, retries it, and throws TernTimeoutError at the end', async () => {
    const { client: c, calls } = client(['hang', 'hang'], { timeoutMs: 20, maxRetries: 1 });
    const err = await c.getLogs().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TernTimeoutError);
    expect(err).toBeInstanceOf(TernApiError);
    expect(err).toMatchObject({ status: 0, code: 'TIMEOUT', timeoutMs: 20 });
    expect(calls).toHaveLength(2);
  });

  it('recovers when a timed-out attempt is followed by an answer', async () => {
    const { client: c, calls } = client(['hang', json(200, page())], { timeoutMs: 20 });
    await expect(c.getLogs()).resolves.toEqual(page());
    expect(calls).toHaveLength(2);
  });

  it("stops at once, without retrying, when the caller's signal aborts", async () => {
    const controller = new AbortController();
    const { client: c, calls } = client(['hang', json(200, page())]);
    const pending = c.getLogs({}, { signal: controller.signal }).catch((e: unknown) => e);
    await vi.waitFor(() => expect(calls).toHaveLength(1));
    controller.abort(new Error('user gave up'));
    expect(await pending).toMatchObject({ status: 0, code: 'ABORTED' });
    expect(calls).toHaveLength(1);
  });

  it('rejects a 200 whose body is not a logs page, without retrying', async () => {
    const { client: c, calls } = client([json(200, { hello: 'world' })]);
    await expect(c.getLogs()).rejects.toMatchObject({ status: 200, code: 'INVALID_RESPONSE' });
    expect(calls).toHaveLength(1);
  });
});

describe('logs() iterator paging', () => {
  it('skips entries pushed onto the next page by newer emails', async () => {
    const entry = (id: string) => ({ ...page().data[0]!, id });
    const { client: c, calls } = client([
      json(200, { data: [entry('c'), entry('b')], meta: { page: 1, limit: 2, total: 3, totalPages: 2 } }),
      // a new email "d" arrived: "b" moved down to page 2
      json(200, { data: [entry('b'), entry('a')], meta: { page: 2, limit: 2, total: 4, totalPages: 2 } }),
    ]);
    const ids: string[] = [];
    for await (const e of c.logs({ limit: 2 })) ids.push(e.id);
    expect(ids).toEqual(['c', 'b', 'a']);
    expect(calls.map((x) => x.url)).toEqual([
      'http://127.0.0.1:3000/emails/logs?page=1&limit=2',
      'http://127.0.0.1:3000/emails/logs?page=2&limit=2',
    ]);
  });

  it('asks for 100 per page by default and stops on an empty page', async () => {
    const { client: c, calls } = client([
      json(200, { data: [], meta: { page: 1, limit: 100, total: 0, totalPages: 0 } }),
    ]);
    const all: unknown[] = [];
    for await (const e of c.logs()) all.push(e);
    expect(all).toEqual([]);
    expect(calls[0]?.url).toBe('http://127.0.0.1:3000/emails/logs?page=1&limit=100');
  });
});

describe('contacts.erase()', () => {
  const result = {
    erased: true,
    counts: {
      dataKeys: 1,
      contacts: 1,
      emails: 3,
      sandboxMessages: 3,
      webhookDeliveries: 0,
      suppressions: 0,
      unsubscribes: 0,
    },
  };

  it('POSTs { email } to /contacts/erase and resolves with the counts (202 and a repeat’s 200 alike)', async () => {
    const repeat = { ...result, counts: Object.fromEntries(Object.keys(result.counts).map((k) => [k, 0])) };
    const { client: c, calls } = client([json(202, result), json(200, repeat)]);
    await expect(c.contacts.erase('Ada@Example.com')).resolves.toEqual(result);
    await expect(c.contacts.erase('ada@example.com')).resolves.toEqual(repeat);
    expect(calls[0]?.url).toBe('http://127.0.0.1:3000/contacts/erase');
    expect(calls[0]?.init.method).toBe('POST');
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ email: 'Ada@Example.com' });
    expect(new Headers(calls[0]?.init.headers).get('content-type')).toBe('application/json');
  });

  it('a 400 for a bad address is a validation error naming the field, not retried', async () => {
    const { client: c, calls } = client([
      json(400, problem(400, 'Bad Request', 'body.email: email must be a valid email address')),
    ]);
    await expect(c.contacts.erase('nope')).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('body.email'),
    });
    expect(calls).toHaveLength(1);
  });

  it('an answer that is not an erasure result is refused', async () => {
    const { client: c } = client([json(202, { erased: false })]);
    await expect(c.contacts.erase('ada@example.com')).rejects.toThrow();
  });
});
