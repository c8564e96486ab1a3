import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * One log line per answered request (issue 45 item 5: Fastify writes two, `incoming request` when
 * it arrives and `request completed` when answered): nothing on arrival, and on completion one
 * line with the request (the logger's `req` serializer: method, masked URL, host, client address;
 * headers where the app's serializer adds them, credentials redacted), the status and the time
 * taken. Fastify's documented way (`logController`); the errors it logs (a handler's error at
 * `error` with its stack, a stream error, the 503 while closing) are as before. Written through the request's child logger,
 * so its `reqId` and a route's `logLevel` (`/health` and `/ready` log at `warn`) apply.
 */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  /** A 404's line says it (Fastify adds a second, `Route GET:/x not found`). */
  override routeNotFound(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (this.isLogDisabled(request)) return;
    const fields = { req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...fields, err: error }, 'request errored');
    else reply.log.info(fields, 'request completed');
  }
}

/** Fastify's options for Tern's request log (part of `TERN_FASTIFY_OPTIONS`). */
export const ONE_REQUEST_LINE = { logController: new OneLinePerRequest() } as const;
