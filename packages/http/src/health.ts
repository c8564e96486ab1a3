import { withTimeout } from '@tern/kernel';
import type { FastifyInstance } from 'fastify';
import { errorBody } from './errors.js';

/** Thrown by a readiness check whose reason is safe to show (no address, no secret): `/ready` names it. */
export class NotReadyError extends Error {
  override name = 'NotReadyError';
}

export interface ReadinessCheck {
  name: string;
  /** Resolves when ready; a string is a note shown in place of `ok` (ready, e.g. "catching up: …"). */
  check(): Promise<unknown>;
}

/**
 * `/health`: the process is up. `/ready`: every dependency answered (503 naming those that did not);
 * a check may answer ready with a note (the projection catching up: reads are served meanwhile).
 */
export function registerHealthRoutes(app: FastifyInstance, checks: readonly ReadinessCheck[]): void {
  app.get('/health', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/ready', { logLevel: 'warn' }, async (_request, reply) => {
    const results = await Promise.all(
      checks.map(async (c) => {
        try {
          const note = await withTimeout(c.check(), 3000);
          return { name: c.name, ok: true, note: typeof note === 'string' ? note : undefined };
        } catch (error) {
          return {
            name: c.name,
            ok: false,
            reason: error instanceof NotReadyError ? error.message : undefined,
          };
        }
      }),
    );
    const failed = results.filter((r) => !r.ok);
    if (failed.length > 0) {
      const unavailable = failed.filter((r) => r.reason === undefined).map((r) => r.name);
      const reasons = failed.flatMap((r) => (r.reason === undefined ? [] : [r.reason]));
      const parts = [
        ...(unavailable.length > 0 ? [`${unavailable.join(', ')} unavailable`] : []),
        ...reasons,
      ];
      return reply.status(503).send(errorBody(503, `Not ready: ${parts.join('; ')}`, { code: 'NOT_READY' }));
    }
    return {
      status: 'ready',
      checks: Object.fromEntries(results.map((r) => [r.name, (r.ok && r.note) || 'ok'])),
    };
  });
}
