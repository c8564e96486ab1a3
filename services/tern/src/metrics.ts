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
  const providerFailing = new Gauge({
    name: 'sender_provider_failing',
    help: '1 while the mail provider fails (login, connection, envelope sender…), else 0',
    registers: [registry],
  });
  const providerFaults = new Counter({
    name: 'sender_provider_faults_total',
    help: 'Provider transactions that failed for the provider, not the recipient, by step and code',
    labelNames: ['step', 'code'] as const,
    registers: [registry],
  });
  return {
    registry,
    providerFailing,
    providerFaults,
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

/** Times every request and serves `/metrics`. */
export function installMetrics(app: FastifyInstance, metrics: Metrics, refresh?: () => Promise<void>): void {
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpDuration
      .labels(request.method, request.routeOptions.url ?? 'unmatched', String(reply.statusCode))
      .observe(reply.elapsedTime / 1000);
  });
  // An operations endpoint, like /health and /ready: not part of the API's OpenAPI document.
  app.get('/metrics', { logLevel: 'warn', schema: { hide: true } }, async (_request, reply) => {
    await refresh?.().catch(() => undefined);
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
