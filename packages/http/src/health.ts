import type { FastifyInstance } from 'fastify';
import { errorBody } from './errors.js';

export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

/** `/health`: the process is up. `/ready`: every dependency answered (503 naming those that did not). */
export function registerHealthRoutes(app: FastifyInstance, checks: readonly ReadinessCheck[]): void {
  app.get('/health', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/ready', { logLevel: 'warn' }, async (_request, reply) => {
    const results = await Promise.all(
      checks.map(async (c) => {
        try {
          await withTimeout(c.check(), 3000);
          return { name: c.name, ok: true };
        } catch {
          return { name: c.name, ok: false };
        }
      }),
    );
    const failed = results.filter((r) => !r.ok).map((r) => r.name);
    if (failed.length > 0) {
      return reply.status(503).send(errorBody(503, `Not ready: ${failed.join(', ')} unavailable`));
    }
    return { status: 'ready', checks: Object.fromEntries(results.map((r) => [r.name, 'ok'])) };
  });
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
