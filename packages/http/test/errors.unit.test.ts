import { errorBodySchema } from '@tern/contracts';
import Fastify, { type FastifyServerOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { httpError, installErrorHandlers } from '../src/index.js';

async function appThrowing(error: unknown) {
  const app = Fastify();
  installErrorHandlers(app);
  app.get('/boom', async () => {
    throw error;
  });
  return app;
}

/** `payload` posted as JSON to a route of an app (of `options`) with the error handlers. */
async function postJson(payload: string, options?: FastifyServerOptions) {
  const app = Fastify(options);
  installErrorHandlers(app);
  app.post('/in', async () => ({ ok: true }));
  return app.inject({ method: 'POST', url: '/in', headers: { 'content-type': 'application/json' }, payload });
}

describe('installErrorHandlers', () => {
  it.each([
    [
      'answers an HttpError with its status, SPEC §4 body and extra fields',
      httpError(403, 'Missing required API key scope', { code: 'MISSING_SCOPE', missingScope: 'email:read' }),
      {
        statusCode: 403,
        error: 'Forbidden',
        message: 'Missing required API key scope',
        code: 'MISSING_SCOPE',
        missingScope: 'email:read',
      },
    ],
    [
      'hides the message of an unexpected error behind a bare 500',
      new Error('secret internals'),
      {
        statusCode: 500,
        error: 'Internal Server Error',
        message: 'Internal Server Error',
        code: 'INTERNAL_ERROR',
      },
    ],
  ])('%s', async (_what, error, body) => {
    const app = await appThrowing(error);
    const res = await app.inject('/boom');
    expect(res.statusCode).toBe(body.statusCode);
    expect(res.json()).toEqual(body);
  });

  it('answers 503 with Retry-After when a store cannot be reached', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const app = await appThrowing(refused);
    const res = await app.inject('/boom');
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.json().message).toContain('retry later');
    expect(res.json().code).toBe('UNAVAILABLE');
  });

  it('answers an unknown route with a 404 body naming it', async () => {
    const app = await appThrowing(new Error('unused'));
    const res = await app.inject('/nope?x=1');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({
      statusCode: 404,
      error: 'Not Found',
      message: 'Route GET /nope not found',
      code: 'ROUTE_NOT_FOUND',
    });
  });

  it('keeps a client mistake found by Fastify (bad JSON) a 400', async () => {
    const res = await postJson('{');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request', code: 'BAD_REQUEST' });
  });

  it('gives a 4xx raised by Fastify the general code of its status (413 body too large)', async () => {
    const res = await postJson(JSON.stringify({ much: 'more than ten bytes' }), { bodyLimit: 10 });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ statusCode: 413, code: 'PAYLOAD_TOO_LARGE' });
  });

  it('answers a store refusing the data with 400 INVALID_DATA, never 500', async () => {
    const app = await appThrowing(
      Object.assign(new Error('value too long for type character varying(5)'), { code: '22001' }),
    );
    const res = await app.inject('/boom');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, code: 'INVALID_DATA' });
    expect(res.json().message).not.toContain('varying');
  });

  it.each([
    ['an HttpError', httpError(409, 'taken', { code: 'CONFLICT' })],
    ['a plain Error', new Error('boom')],
    ['a refused connection', Object.assign(new Error('x'), { code: 'ECONNREFUSED' })],
    ['a data error', { code: '23505', message: 'duplicate' }],
  ])('every body of %s matches the contract (code of the closed enum)', async (_what, error) => {
    const app = await appThrowing(error);
    const res = await app.inject('/boom');
    expect(errorBodySchema.safeParse(res.json()).success).toBe(true);
  });
});

describe('Postgres character errors are the client’s mistake (issue 9, item 5)', () => {
  it.each(['22P05', '22021'])('maps %s to 400', async (code) => {
    const app = Fastify();
    installErrorHandlers(app);
    app.get('/x', async () => {
      throw Object.assign(new Error('unsupported Unicode escape sequence'), { code });
    });
    const res = await app.inject('/x');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, code: 'INVALID_CHARACTERS' });
    await app.close();
  });
});
