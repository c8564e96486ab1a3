import { createHmac } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { REDACT_OPTIONS, requestLogFields } from '@tern/auth';
import { installErrorHandlers, type ReadinessCheck, registerHealthRoutes } from '@tern/http';
import { createInboundReader } from '@tern/inbound';
import { getRetentionOverride } from '@tern/tenant-settings';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { type ApiRoutesOptions, apiRoutes } from './api-routes.js';
import { resendCompatRoutes } from './compat/resend.js';
import { inboundCutoff } from './inbound/cutoff.js';
import { registerApiDocs } from './openapi.js';

export interface ApiLoggerOptions {
  level?: string;
  /** Where log lines go (a pino destination); default stdout. */
  stream?: NodeJS.WritableStream;
}

/**
 * What `createApiApp` is given: the options of the routes (`ApiRoutesOptions`, handed to
 * `apiRoutes` as they are — one list of fields, not a copy of each) and what the HTTP app
 * around them needs (logger, readiness checks, proxy trust, the OpenAPI document's servers).
 */
export interface ApiDeps extends Omit<ApiRoutesOptions, 'logger' | 'surface'> {
  /**
   * Options (level, destination) for a logger built here with credential redaction, or a ready
   * logger (e.g. the all-in-one process's pino, which must redact itself). false or absent: no logs.
   */
  logger?: ApiLoggerOptions | FastifyBaseLogger | false;
  /** Checks of `/ready`; default Postgres and ClickHouse. The all-in-one process adds the event log. */
  readiness?: readonly ReadinessCheck[];
  /**
   * TRUST_PROXY: Fastify's `trustProxy`, which proxies' `X-Forwarded-For` names the client (the
   * rate limits count per client address). Default false: the socket's peer is the client.
   */
  trustProxy?: boolean | number | string[];
  /** PUBLIC_URL: the OpenAPI document's `servers`. */
  publicUrl?: string;
  /** The process also mounts `POST /events` (ingest): the document declares its tag and security scheme. */
  documentIngest?: boolean;
}

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

function isLoggerInstance(logger: ApiDeps['logger']): logger is FastifyBaseLogger {
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
  // Signed tokens in paths (`/u/:token`, tracking links) and 128-character tenant ids (SPEC §5) are
  // longer than Fastify's 100-character default (→ 414); ids are still bounded by their own schemas.
  const common = {
    requestIdHeader: 'x-request-id',
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    trustProxy: fastifyTrustProxy(deps.trustProxy ?? false),
  };
  const app: FastifyInstance = isLoggerInstance(deps.logger)
    ? Fastify({ ...common, loggerInstance: deps.logger })
    : Fastify({ ...common, logger: apiLoggerOptions(deps.logger) });
  installErrorHandlers(app);
  // No answer may be sniffed into another type (a JSON error echoing input rendered as HTML).
  // A callback hook: no promise per request (issue 29).
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('x-content-type-options', 'nosniff');
    done(null, payload);
  });
  registerHealthRoutes(
    app,
    deps.readiness ?? [
      { name: 'postgres', check: () => deps.pool.query('SELECT 1').then(() => undefined) },
      {
        name: 'clickhouse',
        check: async () => {
          const result = await deps.ch.ping();
          if (!result.success) throw result.error;
        },
      },
    ],
  );
  await registerApiDocs(app, {
    ...(deps.publicUrl ? { serverUrl: deps.publicUrl } : {}),
    ...(deps.documentIngest ? { ingest: true } : {}),
  });
  // Everything but the app's own fields goes to the routes as it is.
  const {
    logger: _logger,
    readiness: _readiness,
    trustProxy: _proxy,
    publicUrl: _url,
    documentIngest: _ingest,
    ...routes
  } = deps;
  await app.register(apiRoutes, routes);
  // Resend's API over Tern's routes (SPEC §22): the `resend` package with its base URL set here.
  await app.register(resendCompatRoutes, {
    prefix: '/compat/resend',
    // Signed download links of received mail, under a key of their own derived from TRACKING_SECRET.
    ...(deps.keyring && deps.trackingSecret
      ? {
          downloads: {
            secret: createHmac('sha256', deps.trackingSecret)
              .update('resend-compat-downloads')
              .digest('base64url'),
            pool: deps.pool,
            reader: createInboundReader(deps.pool, deps.keyring, {
              cutoffOf: inboundCutoff(
                (tenantId) => getRetentionOverride(deps.pool, tenantId),
                deps.now ?? (() => new Date()),
                deps.retentionDays,
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
export async function createSendingApp(
  deps: Pick<
    ApiDeps,
    'pool' | 'stores' | 'jwt' | 'now' | 'retentionDays' | 'rateLimit' | 'logger' | 'domainPolicy'
  > & {
    sending: NonNullable<ApiDeps['sending']>;
  },
): Promise<FastifyInstance> {
  const app: FastifyInstance = isLoggerInstance(deps.logger)
    ? Fastify({ loggerInstance: deps.logger })
    : Fastify({ logger: apiLoggerOptions(deps.logger) });
  installErrorHandlers(app);
  await app.register(apiRoutes, {
    pool: deps.pool,
    ...(deps.stores ? { stores: deps.stores } : {}),
    ch: NO_CLICKHOUSE,
    jwt: deps.jwt,
    retentionDays: deps.retentionDays,
    surface: 'sending',
    sending: deps.sending,
    ...(deps.now ? { now: deps.now } : {}),
    ...(deps.rateLimit !== undefined ? { rateLimit: deps.rateLimit } : {}),
    ...(deps.domainPolicy ? { domainPolicy: deps.domainPolicy } : {}),
  });
  await app.ready();
  return app;
}
