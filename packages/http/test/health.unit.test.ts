import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { installErrorHandlers, NotReadyError, registerHealthRoutes } from '../src/index.js';

describe('/ready', () => {
  it('is 503 naming a stalled projector with its reason, and a failed store without its error text', async () => {
    const app = Fastify();
    installErrorHandlers(app);
    registerHealthRoutes(app, [
      {
        name: 'postgres',
        check: async () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.5:5432')),
      },
      {
        name: 'projector',
        check: async () =>
          Promise.reject(new NotReadyError('projector stalled: no progress for 61 s with lag 3')),
      },
    ]);
    const res = await app.inject({ method: 'GET', url: '/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json().message).toBe(
      'Not ready: postgres unavailable; projector stalled: no progress for 61 s with lag 3',
    );
    expect(res.body).not.toContain('10.0.0.5');
    await app.close();
  });

  it('is 200 when every check passes', async () => {
    const app = Fastify();
    registerHealthRoutes(app, [{ name: 'projector', check: async () => undefined }]);
    expect((await app.inject({ method: 'GET', url: '/ready' })).statusCode).toBe(200);
    await app.close();
  });

  it('is 200 with the note of a check that is ready but catching up (reads go on meanwhile)', async () => {
    const app = Fastify();
    registerHealthRoutes(app, [
      { name: 'postgres', check: async () => undefined },
      { name: 'projector', check: async () => 'catching up: joining the consumer group' },
    ]);
    const res = await app.inject({ method: 'GET', url: '/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'ready',
      checks: { postgres: 'ok', projector: 'catching up: joining the consumer group' },
    });
    await app.close();
  });
});
