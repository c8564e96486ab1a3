import cluster from 'node:cluster';
import { createHash, timingSafeEqual } from 'node:crypto';
import { httpError } from '@tern/http';
import type { FastifyInstance } from 'fastify';
import { AggregatorRegistry, Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** IPC message types between an ingest worker's `/metrics` and the cluster primary (issue 32). */
const CLUSTER_METRICS_REQ = 'tern:cluster-metrics-req';
const CLUSTER_METRICS_RES = 'tern:cluster-metrics-res';

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
 * exist: 404), since process and traffic figures are no one else's business. In a cluster worker
 * (the ingest workers sharing one port), a scrape reaches one worker at a time, so `/metrics`
 * answers the primary's aggregate of every worker's registry: one scrape sees the whole process.
 * Returns whether `/metrics` is served.
 */
export function installMetrics(
  app: FastifyInstance,
  metrics: Metrics,
  refresh?: () => Promise<void>,
  access: MetricsAccess = { production: false },
): boolean {
  // One labelled child per (method, route, status), made once: `labels()` validates and builds
  // closures on every call (issue 29). Routes are the router's patterns, so the set is small;
  // bounded anyway.
  const timers = new Map<string, { observe(value: number): void }>();
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const key = `${request.method} ${route} ${reply.statusCode}`;
    let timer = timers.get(key);
    if (timer === undefined) {
      if (timers.size >= 1000) timers.clear();
      timer = metrics.httpDuration.labels(request.method, route, String(reply.statusCode));
      timers.set(key, timer);
    }
    timer.observe(reply.elapsedTime / 1000);
    done();
  });
  const clustered = cluster.isWorker && typeof process.send === 'function';
  if (clustered) {
    // Constructing one installs the worker's side: it answers the primary with these registries.
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries([metrics.registry]);
  }
  const { token } = access;
  if (token === undefined && access.production) return false;
  // An operations endpoint, like /health and /ready: not part of the API's OpenAPI document.
  app.get('/metrics', { logLevel: 'warn', schema: { hide: true } }, async (request, reply) => {
    if (token !== undefined && !hasMetricsToken(request.headers.authorization, token)) {
      reply.header('www-authenticate', 'Bearer realm="metrics"');
      throw httpError(401, 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', {
        code: request.headers.authorization ? 'INVALID_CREDENTIAL' : 'MISSING_CREDENTIAL',
      });
    }
    await refresh?.().catch(() => undefined);
    reply.header('content-type', metrics.registry.contentType);
    if (!clustered) return metrics.registry.metrics();
    try {
      return await askPrimaryForMetrics();
    } catch (error) {
      // A scrape that cannot see every worker fails rather than under-counts.
      reply.code(503).header('content-type', 'text/plain; charset=utf-8');
      return `metrics of the ingest workers unavailable: ${error instanceof Error ? error.message : String(error)}\n`;
    }
  });
  return true;
}

let nextRequest = 0;
const pending = new Map<number, { resolve(text: string): void; reject(error: Error): void }>();
let listening = false;

/** A worker's scrape: the primary gathers every worker's metrics (prom-client's AggregatorRegistry). */
function askPrimaryForMetrics(timeoutMs = 6_000): Promise<string> {
  if (!listening) {
    listening = true;
    process.on('message', (message: unknown) => {
      const m = message as { type?: unknown; id?: number; text?: string; error?: string } | null;
      if (m?.type !== CLUSTER_METRICS_RES || typeof m.id !== 'number') return;
      const waiter = pending.get(m.id);
      if (!waiter) return;
      pending.delete(m.id);
      if (typeof m.text === 'string') waiter.resolve(m.text);
      else waiter.reject(new Error(m.error ?? 'no answer'));
    });
  }
  const id = nextRequest++;
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(new Error('the cluster primary did not answer in time'));
    }, timeoutMs);
    pending.set(id, {
      resolve: (text) => {
        clearTimeout(timer);
        resolve(text);
      },
      reject: (error) => {
        clearTimeout(timer);
        reject(error);
      },
    });
    process.send!({ type: CLUSTER_METRICS_REQ, id });
  });
}

/** In the cluster primary: answers each worker's scrape with the aggregate of all workers. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: unknown) => {
    const m = message as { type?: unknown; id?: unknown } | null;
    if (m?.type !== CLUSTER_METRICS_REQ || typeof m.id !== 'number') return;
    const id = m.id;
    aggregator.clusterMetrics().then(
      (text) => worker.isConnected() && worker.send({ type: CLUSTER_METRICS_RES, id, text }),
      (error: unknown) =>
        worker.isConnected() &&
        worker.send({
          type: CLUSTER_METRICS_RES,
          id,
          error: error instanceof Error ? error.message : String(error),
        }),
    );
  });
}
