import type { FastifyInstance } from 'fastify';

/**
 * Fastify's options for Tern's request log: Fastify's own two lines per request (`incoming request`
 * when it arrives, `request completed` when answered) are off; `logOneLinePerRequest` writes one.
 */
export const ONE_REQUEST_LINE = { disableRequestLogging: true } as const;

/**
 * One log line per answered request (issue 45 item 5: half the logging cost of Fastify's two):
 * `request completed` with the request (the logger's `req` serializer: method, masked URL, host,
 * client address; headers where the app's serializer adds them, credentials redacted), the status
 * and the time taken. Written through the request's child logger, so its `reqId` and a route's
 * `logLevel` (`/health` and `/ready` log at `warn`) apply. A callback hook: no promise per request.
 */
export function logOneLinePerRequest(app: FastifyInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      { req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime },
      'request completed',
    );
    done();
  });
}
