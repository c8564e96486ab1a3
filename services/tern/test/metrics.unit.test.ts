import { installErrorHandlers } from '@tern/http';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { createMetrics, installMetrics, type MetricsAccess } from '../src/metrics.js';

// `GET /metrics` over a real socket (issue 24 #12): public only in development; production needs
// METRICS_TOKEN, without which the route does not exist.
const TOKEN = 'metrics-token-0123456789abcdef';
let app: FastifyInstance | undefined;

async function serve(access: MetricsAccess): Promise<{ base: string; served: boolean }> {
  app = Fastify();
  installErrorHandlers(app);
  const served = installMetrics(app, createMetrics(), undefined, access);
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  return { base, served };
}

afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('GET /metrics', () => {
  it('development without a token: public', async () => {
    const { base, served } = await serve({ production: false });
    expect(served).toBe(true);
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('process_cpu_user_seconds_total');
  });

  it('production without a token: not served (404), nothing leaks', async () => {
    const { base, served } = await serve({ production: true });
    expect(served).toBe(false);
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain('process_');
  });

  it.each([false, true])(
    'with METRICS_TOKEN (production %s): 401 without it or with another, 200 with it',
    async (production) => {
      const { base } = await serve({ production, token: TOKEN });
      const none = await fetch(`${base}/metrics`);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await none.json()).toMatchObject({ code: 'MISSING_CREDENTIAL' });
      for (const authorization of [
        `Bearer ${TOKEN}x`,
        `Bearer ${TOKEN.slice(1)}`,
        TOKEN,
        `Basic ${TOKEN}`,
        'Bearer ',
      ]) {
        const res = await fetch(`${base}/metrics`, { headers: { authorization } });
        expect(res.status, authorization).toBe(401);
        const body = await res.text();
        expect(body).toContain('INVALID_CREDENTIAL');
        expect(body).not.toContain(TOKEN);
      }
      for (const authorization of [`Bearer ${TOKEN}`, `bearer  ${TOKEN}`, `BEARER ${TOKEN} `]) {
        const res = await fetch(`${base}/metrics`, { headers: { authorization } });
        expect(res.status, authorization).toBe(200);
        expect(await res.text()).toContain('http_request_duration_seconds');
      }
    },
  );
});
