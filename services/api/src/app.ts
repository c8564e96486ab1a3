import type { ClickHouseClient } from '@clickhouse/client';
import { type JwtVerifier, REDACT_OPTIONS, requestLogFields } from '@tern/auth';
import { installErrorHandlers, type ReadinessCheck, registerHealthRoutes } from '@tern/http';
import type { Keyring } from '@tern/privacy';
import type { ReadModelFeed } from '@tern/stores';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type pg from 'pg';
import { apiRoutes } from './api-routes.js';
import { resendCompatRoutes } from './compat/resend.js';
import type { DomainPolicy } from './domains/policy.js';
import type { DomainRouteOptions } from './domains/routes.js';
import { registerApiDocs } from './openapi.js';
import type { ProviderRouteOptions } from './providers/routes.js';
import type { SendingDeps } from './route-deps.js';
import type { WebhookRouteOptions } from './webhooks/options.js';

export interface ApiLoggerOptions {
  level?: string;
  /** Where log lines go (a pino destination); default stdout. */
  stream?: NodeJS.WritableStream;
}

export interface ApiDeps {
  pool: pg.Pool;
  ch: ClickHouseClient;
  jwt: JwtVerifier;
  /** Business clock; default the wall clock. Tests inject a fixed one. */
  now?: () => Date;
  /** Server default retention in days (RETENTION_DAYS). */
  retentionDays: number;
  /** Server default send rate per tenant (SEND_RATE_PER_SECOND); default 0 = unlimited. */
  sendRatePerSecond?: number;
  /** API key cache TTL (default 2000 ms, at most 5000). */
  keyCacheTtlMs?: number;
  /** How often key uses are written to `last_used_at` (default 10 s; also on close). */
  lastUsedFlushMs?: number;
  /**
   * Options (level, destination) for a logger built here with credential redaction, or a ready
   * logger (e.g. the all-in-one process's pino, which must redact itself). false or absent: no logs.
   */
  logger?: ApiLoggerOptions | FastifyBaseLogger | false;
  /** Per-credential request limit (default 1200/min); false: none. */
  rateLimit?: { max: number; timeWindowMs: number } | false;
  /**
   * TRACKING_SECRET: signs unsubscribe and tracking tokens; at least 16 characters. Without it
   * the `/u/:token` and `/t/*` routes are not mounted (the runtime always passes one).
   */
  trackingSecret?: string;
  /** OPEN_DEDUP_SECONDS: one open per email and reader within this window (default 3600). */
  openDedupSeconds?: number;
  /** Largest CSV body `POST /contacts/import` reads; default 64 MiB. */
  importMaxBytes?: number;
  /** Checks of `/ready`; default Postgres and ClickHouse. The all-in-one process adds the event log. */
  readiness?: readonly ReadinessCheck[];
  /** Outgoing webhooks (SPEC §17); absent → no `/webhooks*` routes. */
  webhooks?: WebhookRouteOptions;
  /** Sending routes, and with `trackingSecret` the tracking routes (SPEC §11); absent → not mounted. */
  sending?: SendingDeps;
  /** Data keys of personal fields (SPEC §14); absent → no `POST /contacts/erase`. */
  keyring?: Keyring;
  /** When an erasure's scrub runs again (default 45 s; tests shorten it). */
  erasureRescrubMs?: number;
  /** Changes of the read models (`createReadModelFeed`): repeated reads are then memoised. */
  readModel?: ReadModelFeed;
  /** Sending domains (SPEC §20); absent → no `/domains*` routes. */
  domains?: DomainRouteOptions;
  /** Whether a send's From domain must be verified (production with a real provider). */
  domainPolicy?: DomainPolicy;
  /** Provider notification credentials (SPEC §21); with `sending`, mounts `/providers/*`. */
  providers?: ProviderRouteOptions;
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
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    return payload;
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
  await app.register(apiRoutes, {
    pool: deps.pool,
    ch: deps.ch,
    jwt: deps.jwt,
    retentionDays: deps.retentionDays,
    ...(deps.sendRatePerSecond !== undefined ? { sendRatePerSecond: deps.sendRatePerSecond } : {}),
    ...(deps.trackingSecret !== undefined ? { trackingSecret: deps.trackingSecret } : {}),
    ...(deps.openDedupSeconds !== undefined ? { openDedupSeconds: deps.openDedupSeconds } : {}),
    ...(deps.importMaxBytes !== undefined ? { importMaxBytes: deps.importMaxBytes } : {}),
    ...(deps.now ? { now: deps.now } : {}),
    ...(deps.keyCacheTtlMs !== undefined ? { keyCacheTtlMs: deps.keyCacheTtlMs } : {}),
    ...(deps.lastUsedFlushMs !== undefined ? { lastUsedFlushMs: deps.lastUsedFlushMs } : {}),
    ...(deps.rateLimit !== undefined ? { rateLimit: deps.rateLimit } : {}),
    ...(deps.webhooks ? { webhooks: deps.webhooks } : {}),
    ...(deps.sending ? { sending: deps.sending } : {}),
    ...(deps.keyring ? { keyring: deps.keyring } : {}),
    ...(deps.erasureRescrubMs !== undefined ? { erasureRescrubMs: deps.erasureRescrubMs } : {}),
    ...(deps.readModel ? { readModel: deps.readModel } : {}),
    ...(deps.domains ? { domains: deps.domains } : {}),
    ...(deps.domainPolicy ? { domainPolicy: deps.domainPolicy } : {}),
    ...(deps.providers ? { providers: deps.providers } : {}),
  });
  // Resend's API over Tern's routes (SPEC §22): the `resend` package with its base URL set here.
  await app.register(resendCompatRoutes, { prefix: '/compat/resend' });
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
  deps: Pick<ApiDeps, 'pool' | 'jwt' | 'now' | 'retentionDays' | 'rateLimit' | 'logger' | 'domainPolicy'> & {
    sending: NonNullable<ApiDeps['sending']>;
  },
): Promise<FastifyInstance> {
  const app: FastifyInstance = isLoggerInstance(deps.logger)
    ? Fastify({ loggerInstance: deps.logger })
    : Fastify({ logger: apiLoggerOptions(deps.logger) });
  installErrorHandlers(app);
  await app.register(apiRoutes, {
    pool: deps.pool,
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
