import { createHash, timingSafeEqual } from 'node:crypto';
import { httpError } from '@tern/http';
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Prometheus metrics of one process; names are snake_case with their unit. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by route and status',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const eventsIngested = new Counter({
    name: 'ingest_events_accepted_total',
    help: 'Delivery events acknowledged by the event log',
    registers: [registry],
  });
  const batchDuration = new Histogram({
    name: 'projector_batch_duration_ms',
    help: 'Time to fold one batch into Postgres and ClickHouse',
    buckets: [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
    registers: [registry],
  });
  const eventsProjected = new Counter({
    name: 'projector_events_total',
    help: 'Records handled by the projector, by outcome',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const projectorLag = new Gauge({
    name: 'projector_lag_events',
    help: 'Records in the event log not yet committed by the projector',
    registers: [registry],
  });
  const webhookAttempts = new Counter({
    name: 'dispatcher_attempts_total',
    help: 'Webhook HTTP attempts, by outcome (delivered, retry, failed)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const webhookAttemptDuration = new Histogram({
    name: 'dispatcher_attempt_duration_ms',
    help: 'Duration of one webhook HTTP attempt',
    buckets: [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000],
    registers: [registry],
  });
  const dispatcherLag = new Gauge({
    name: 'dispatcher_lag_events',
    help: 'Records in the event log not yet committed by the webhook dispatcher',
    registers: [registry],
  });
  return {
    registry,
    httpDuration,
    eventsIngested,
    batchDuration,
    eventsProjected,
    projectorLag,
    webhookAttempts,
    webhookAttemptDuration,
    dispatcherLag,
  };
}
export type Metrics = ReturnType<typeof createMetrics>;

/** Who may read `/metrics`. */
export interface MetricsAccess {
  /** METRICS_TOKEN: when set, `/metrics` answers only `Authorization: Bearer <token>`. */
  token?: string | undefined;
  /** NODE_ENV=production: without a token, `/metrics` is not served at all. */
  production: boolean;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** True when the request carries the bearer token (compared in constant time, any header case). */
export function hasMetricsToken(authorization: string | undefined, token: string): boolean {
  const match = /^bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return match?.[1] !== undefined && timingSafeEqual(digest(match[1]), digest(token));
}

/**
 * Times every request and serves `/metrics`: to anyone in development, to the holder of
 * METRICS_TOKEN when it is set, and not at all in production without one (the route does not
 * exist: 404), since process and traffic figures are no one else's business.
 * Returns whether `/metrics` is served.
 */
export function installMetrics(
  app: FastifyInstance,
  metrics: Metrics,
  refresh?: () => Promise<void>,
  access: MetricsAccess = { production: false },
): boolean {
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpDuration
      .labels(request.method, request.routeOptions.url ?? 'unmatched', String(reply.statusCode))
      .observe(reply.elapsedTime / 1000);
  });
  const { token } = access;
  if (token === undefined && access.production) return false;
  app.get('/metrics', { logLevel: 'warn' }, async (request, reply) => {
    if (token !== undefined && !hasMetricsToken(request.headers.authorization, token)) {
      reply.header('www-authenticate', 'Bearer realm="metrics"');
      throw httpError(401, 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', {
        code: request.headers.authorization ? 'INVALID_CREDENTIAL' : 'MISSING_CREDENTIAL',
      });
    }
    await refresh?.().catch(() => undefined);
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  return true;
}
