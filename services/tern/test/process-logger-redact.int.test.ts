import { Writable } from 'node:stream';
import { PROCESS_LOG_OPTIONS } from '@tern/auth';
import { ONE_REQUEST_LINE } from '@tern/http';
import Fastify from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Issue 45 item 5: the process logger (`processLogger`: pino with PROCESS_LOG_OPTIONS) no longer
// runs pino's redaction over `req` and `res` on every request line; its serializers keep the
// credentials out instead. Over a real socket, with every credential header a client can send,
// nothing secret may reach a line, whichever way it is logged.
const SECRETS = [
  'Bearer sk-secret-token-1',
  'tern_key_secret_2',
  'sid=secret-cookie-3',
  'sid=secret-set-cookie-4',
];

const buildApp = (stream: Writable) =>
  Fastify({ ...ONE_REQUEST_LINE, loggerInstance: pino({ level: 'info', ...PROCESS_LOG_OPTIONS }, stream) });

describe('the process logger keeps credentials out of its lines', () => {
  const lines: string[] = [];
  let app: ReturnType<typeof buildApp>;
  let url: string;

  beforeAll(async () => {
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    app = buildApp(stream);
    app.get('/logs-everything', async (request) => {
      request.log.info({ req: request }, 'the request');
      request.log.info({ headers: request.headers }, 'its headers');
      request.log.info({ res: { statusCode: 200, headers: { 'set-cookie': SECRETS[3] } } }, 'a response');
      // A store's refusal as pg gives it (a CHECK's, with the failing row in `detail`), alone and as a cause.
      const refused = Object.assign(new Error('new row violates check constraint "x_partition_window"'), {
        code: '23514',
        detail: 'Failing row contains (t1, em_1, bob@example.test, Secret subject 5).',
      });
      request.log.warn({ err: refused }, 'a batch refused');
      request.log.warn(
        { err: Object.assign(new Error('batch failed'), { cause: refused }) },
        'a wrapped refusal',
      );
      return { ok: true };
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(async () => {
    await app?.close();
  });

  it('request line, req, headers and res: no credential, the rest as before', async () => {
    const res = await fetch(`${url}/logs-everything?to=ann%40example.test`, {
      headers: { authorization: SECRETS[0]!, 'x-api-key': SECRETS[1]!, cookie: SECRETS[2]! },
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 50));
    const text = lines.join('\n');
    for (const secret of SECRETS) expect(text).not.toContain(secret.split('=').pop());
    expect(text).not.toContain('ann%40example.test');

    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const byMsg = (msg: string) => parsed.find((l) => l.msg === msg)!;
    const line = byMsg('request completed');
    expect(line.req).toEqual({
      method: 'GET',
      url: '/logs-everything?to=[address]',
      host: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
      remoteAddress: '127.0.0.1',
    });
    expect(line.res).toEqual({ statusCode: 200 });
    expect(typeof line.reqId).toBe('string');
    expect(typeof line.responseTime).toBe('number');
    expect(byMsg('the request').req).not.toHaveProperty('headers');
    expect(byMsg('its headers').headers).toMatchObject({
      authorization: '[REDACTED]',
      'x-api-key': '[REDACTED]',
      cookie: '[REDACTED]',
    });
    expect(byMsg('a response').res).toEqual({ statusCode: 200, headers: { 'set-cookie': '[REDACTED]' } });
    // A store error's data stays out; its code and message are logged.
    expect(text).not.toContain('bob@example.test');
    expect(text).not.toContain('Secret subject 5');
    expect(byMsg('a batch refused').err).toMatchObject({ code: '23514', detail: '[REDACTED]' });
    expect(String((byMsg('a batch refused').err as { message: string }).message)).toContain(
      'x_partition_window',
    );
    // pino's err serializer logs a cause by its message and stack only: no detail to censor there.
    expect(byMsg('a wrapped refusal').err).not.toHaveProperty('cause');
  });
});
