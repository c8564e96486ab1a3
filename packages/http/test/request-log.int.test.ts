import { Writable } from 'node:stream';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ONE_REQUEST_LINE, registerHealthRoutes } from '../src/index.js';

// Issue 45 item 5: one log line per request (Fastify writes two by default), over a real socket.
const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line));
    done();
  },
});
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  app = Fastify({ ...ONE_REQUEST_LINE, loggerInstance: pino({ level: 'info' }, sink) as FastifyBaseLogger });
  registerHealthRoutes(app, []);
  app.get('/thing', async () => ({ ok: true }));
  app.get('/bug', async () => {
    throw new Error('a bug');
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});
afterAll(() => app?.close());

const requestLines = () => lines.filter((l) => 'reqId' in l);

describe('the request log', () => {
  it('writes one line per request: method, URL, status and time, with the request id', async () => {
    lines.length = 0;
    for (const [path, status] of [
      ['/thing?x=1', 200],
      ['/nowhere', 404],
    ] as const) {
      const res = await fetch(`${base}${path}`, { headers: { 'x-request-id': 'ignored' } });
      expect(res.status).toBe(status);
      await res.text();
    }
    await new Promise((resolve) => setImmediate(resolve));
    const seen = requestLines();
    expect(seen.map((l) => l.msg)).toEqual(['request completed', 'request completed']);
    expect(seen.map((l) => (l.req as { url: string }).url)).toEqual(['/thing?x=1', '/nowhere']);
    expect(seen.map((l) => (l.res as { statusCode: number }).statusCode)).toEqual([200, 404]);
    for (const line of seen) {
      expect(line.responseTime).toEqual(expect.any(Number));
      expect((line.req as { method: string }).method).toBe('GET');
    }
    expect(new Set(seen.map((l) => l.reqId)).size).toBe(2);
  });

  it('still logs a handler’s error at error level, with its stack, beside the request’s line', async () => {
    lines.length = 0;
    const res = await fetch(`${base}/bug`);
    expect(res.status).toBe(500);
    await res.text();
    await new Promise((resolve) => setImmediate(resolve));
    const seen = requestLines();
    expect(seen.map((l) => [l.level, l.msg])).toEqual([
      [50, 'a bug'],
      [30, 'request completed'],
    ]);
    expect((seen[0]!.err as { stack: string }).stack).toContain('request-log.int.test.ts');
    expect(seen[1]).toMatchObject({ res: { statusCode: 500 } });
  });

  it('follows a route’s log level: /health and /ready (warn) write nothing', async () => {
    lines.length = 0;
    for (const path of ['/health', '/ready']) expect((await fetch(`${base}${path}`)).status).toBe(200);
    await new Promise((resolve) => setImmediate(resolve));
    expect(requestLines()).toEqual([]);
  });
});
