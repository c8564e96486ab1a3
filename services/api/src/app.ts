import { createHmac } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { REDACT_OPTIONS, requestLogFields } from '@tern/auth';
import { installErrorHandlers, registerHealthRoutes, TERN_FASTIFY_OPTIONS } from '@tern/http';
import { createInboundReader } from '@tern/inbound';
import { getRetentionOverride } from '@tern/tenant-settings';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { ApiDeps, ApiHttpOptions, ApiLoggerOptions, SendingAppDeps } from './api-options.js';
import { apiRoutes } from './api-routes.js';
import { resendCompatRoutes } from './compat/resend.js';
import { inboundCutoff } from './inbound/cutoff.js';
import { registerApiDocs } from './openapi.js';

/**
 * Longest path parameter the router accepts (longer → 414): a click-tracking token carries the
 * signed URL (base64url), so it is longer than an unsubscribe token (at most 2048).
 */
export const MAX_PARAM_LENGTH = 8192;

/** TRUST_PROXY as Fastify's option: n hops is "trust the n nearest" (Fastify's own reading of a number). */
export function fastifyTrustProxy(
  value: boolean | number | string[],
): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof value === 'number' ? (_address, hop) => hop < value : value;
}

function isLoggerInstance(logger: ApiHttpOptions['logger']): logger is FastifyBaseLogger {
  return typeof logger === 'object' && typeof (logger as Partial<FastifyBaseLogger>).child === 'function';
}

/**
 * Request log lines carry the headers (user agent, request ids… useful when debugging a client);
 * credentials among them are censored by `redact` (REDACT_OPTIONS of @tern/auth), never logged.
 */
export const requestSerializer = (request: FastifyRequest) => ({
  ...requestLogFields(request),
  headers: request.headers,
});

/** Fastify logger options of a Tern HTTP service: level, destination, credential redaction. */
export function apiLoggerOptions(opts: ApiLoggerOptions | false | undefined) {
  if (!opts) return false as const;
  return {
    level: opts.level ?? 'info',
    ...(opts.stream ? { stream: opts.stream } : {}),
    redact: REDACT_OPTIONS,
    serializers: { req: requestSerializer },
  };
}

/**
 * The query API alone (split mode and tests): error handlers, `/health` and `/ready` (Postgres
 * and ClickHouse), OpenAPI at `/docs`, and the routes of `apiRoutes`.
 */
export async function createApiApp(deps: ApiDeps): Promise<FastifyInstance> {
  const { data, policy, features = {} } = deps;
  const http = deps.http ?? {};
  // Signed tokens in paths (`/u/:token`, tracking links) and 128-character tenant ids (SPEC §5) are
  // longer than Fastify's 100-character default (→ 414); ids are still bounded by their own schemas.
  const common = {
    ...TERN_FASTIFY_OPTIONS,
    requestIdHeader: 'x-request-id',
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    trustProxy: fastifyTrustProxy(http.trustProxy ?? false),
  };
  const app: FastifyInstance = isLoggerInstance(http.logger)
    ? Fastify({ ...common, loggerInstance: http.logger })
    : Fastify({ ...common, logger: apiLoggerOptions(http.logger) });
  installErrorHandlers(app);
  // No answer may be sniffed into another type (a JSON error echoing input rendered as HTML). Set
  // as the request starts, by the first hook of the root context: an error keeps the reply's
  // headers (Fastify drops only its content type and length), and no onSend hook means no onSend
  // runner per answer (issue 45 item 5). A callback hook: no promise per request (issue 29).
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('x-content-type-options', 'nosniff');
    done();
  });
  registerHealthRoutes(
    app,
    http.readiness ?? [
      { name: 'postgres', check: () => data.pool.query('SELECT 1').then(() => undefined) },
      {
        name: 'clickhouse',
        check: async () => {
          const result = await data.ch.ping();
          if (!result.success) throw result.error;
        },
      },
    ],
  );
  await registerApiDocs(app, {
    ...(http.publicUrl ? { serverUrl: http.publicUrl } : {}),
    ...(http.documentIngest ? { ingest: true } : {}),
  });
  // Every group but the app's own goes to the routes as it is.
  const { http: _http, ...routes } = deps;
  await app.register(apiRoutes, routes);
  // Resend's API over Tern's routes (SPEC §22): the `resend` package with its base URL set here.
  await app.register(resendCompatRoutes, {
    prefix: '/compat/resend',
    // Signed download links of received mail, under a key of their own derived from TRACKING_SECRET.
    ...(features.keyring && features.trackingSecret
      ? {
          downloads: {
            secret: createHmac('sha256', features.trackingSecret)
              .update('resend-compat-downloads')
              .digest('base64url'),
            pool: data.pool,
            reader: createInboundReader(data.pool, features.keyring, {
              cutoffOf: inboundCutoff(
                (tenantId) => getRetentionOverride(data.pool, tenantId),
                policy.now ?? (() => new Date()),
                policy.retentionDays,
              ),
            }),
          },
        }
      : {}),
  });
  return app;
}

/** A ClickHouse client for an app that must never query ClickHouse: any use throws. */
const NO_CLICKHOUSE = new Proxy({} as ClickHouseClient, {
  get(_target, name) {
    throw new Error(`this process has no ClickHouse (sending surface): ${String(name)}`);
  },
});

/**
 * The sending routes alone (`POST /emails/send|batch`, `/emails/:id*`) behind the same guards as the
 * full API (failed-credential limiter, rate limit, API keys): what a process serving SMTP submission
 * alone (`--services=submission`, SPEC §22) injects each message into. It is not listened on.
 */
export async function createSendingApp(deps: SendingAppDeps): Promise<FastifyInstance> {
  const app: FastifyInstance = isLoggerInstance(deps.logger)
    ? Fastify({ ...TERN_FASTIFY_OPTIONS, loggerInstance: deps.logger })
    : Fastify({ ...TERN_FASTIFY_OPTIONS, logger: apiLoggerOptions(deps.logger) });
  installErrorHandlers(app);
  await app.register(apiRoutes, {
    data: {
      pool: deps.data.pool,
      ch: NO_CLICKHOUSE,
      ...(deps.data.stores ? { stores: deps.data.stores } : {}),
    },
    jwt: deps.jwt,
    policy: {
      retentionDays: deps.policy.retentionDays,
      ...(deps.policy.now ? { now: deps.policy.now } : {}),
      ...(deps.policy.domainPolicy ? { domainPolicy: deps.policy.domainPolicy } : {}),
    },
    ...(deps.limits?.rateLimit !== undefined ? { limits: { rateLimit: deps.limits.rateLimit } } : {}),
    features: { sending: deps.sending },
    surface: 'sending',
  });
  await app.ready();
  return app;
}
