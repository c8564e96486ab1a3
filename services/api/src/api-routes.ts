import { createHash } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import rateLimit from '@fastify/rate-limit';
import type { JwtVerifier } from '@tern/auth';
import { httpError } from '@tern/http';
import type { FastifyPluginAsync } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type pg from 'pg';
import { createAnalyticsQueries } from './analytics-queries.js';
import { analyticsRoutes } from './analytics-routes.js';
import { type ApiKeyStoreLogger, createApiKeyStore } from './api-key-store.js';
import { campaignRoutes } from './campaigns/routes.js';
import { contactRoutes } from './contacts/routes.js';
import { createAuthHook } from './credentials.js';
import { logsRoutes } from './logs-routes.js';
import { projectRoutes } from './projects/routes.js';
import type { ApiRouteDeps } from './route-deps.js';
import { sequenceRoutes } from './sequences/routes.js';
import { suppressionRoutes } from './suppressions/routes.js';
import { templateRoutes } from './templates/routes.js';
import { tenantRoutes } from './tenant-routes.js';
import { unsubscribeRoutes } from './unsubscribe/routes.js';

export interface ApiRoutesOptions {
  pool: pg.Pool;
  ch: ClickHouseClient;
  jwt: JwtVerifier;
  /** Business clock (periods, retention, key expiry, timestamps written). Default: the wall clock. */
  now?: () => Date;
  /** Server default retention in days (RETENTION_DAYS). */
  retentionDays: number;
  /** How long an instance trusts a looked-up API key; bounds how late it sees a revocation elsewhere. ≤ 5000. */
  keyCacheTtlMs?: number;
  /** How often key uses are written to `last_used_at`. Default 10 s. */
  lastUsedFlushMs?: number;
  logger?: ApiKeyStoreLogger;
  /**
   * Requests per credential (else per client address) and window; false turns it off. Default
   * 1200 per minute. Counters live in each instance's memory.
   */
  rateLimit?: { max: number; timeWindowMs: number } | false;
  /** TRACKING_SECRET: signs unsubscribe (and tracking) tokens. Absent: no `/u/:token` routes. */
  trackingSecret?: string;
  /** Largest CSV body `POST /contacts/import` reads; default 64 MiB. */
  importMaxBytes?: number;
}

export const DEFAULT_RATE_LIMIT = { max: 1200, timeWindowMs: 60_000 } as const;

/** Whom a request is counted against: its credential (hashed, never kept in clear), else its address. */
function rateLimitKey(headers: Record<string, string | string[] | undefined>, ip: string): string {
  const credential = headers['x-api-key'] ?? headers.authorization;
  const value = Array.isArray(credential) ? credential.join(',') : credential;
  return value ? `c:${createHash('sha256').update(value).digest('base64url')}` : `ip:${ip}`;
}

export const DEFAULT_KEY_CACHE_TTL_MS = 2_000;
/** SPEC §8: other instances must refuse a revoked key within 5 s. */
export const MAX_KEY_CACHE_TTL_MS = 5_000;
export const DEFAULT_LAST_USED_FLUSH_MS = 10_000;

/**
 * The query API's routes as one encapsulated plugin, so the all-in-one process can mount them next
 * to ingest: its own zod compilers, the auth hook (driven by each route's `config.auth`), the API
 * key store (flushed on close). Register `registerApiDocs` on the parent first to document them.
 */
export const apiRoutes: FastifyPluginAsync<ApiRoutesOptions> = async (app, opts) => {
  const keyCacheTtlMs = opts.keyCacheTtlMs ?? DEFAULT_KEY_CACHE_TTL_MS;
  if (!(keyCacheTtlMs >= 0 && keyCacheTtlMs <= MAX_KEY_CACHE_TTL_MS)) {
    throw new Error(
      `keyCacheTtlMs must be 0..${MAX_KEY_CACHE_TTL_MS} (SPEC §8: revocations apply within 5 s)`,
    );
  }
  if (!(opts.retentionDays >= 1 && Number.isInteger(opts.retentionDays))) {
    throw new Error('retentionDays must be a positive integer');
  }
  const now = opts.now ?? (() => new Date());
  const keys = createApiKeyStore({
    pool: opts.pool,
    now,
    cacheTtlMs: keyCacheTtlMs,
    lastUsedFlushMs: opts.lastUsedFlushMs ?? DEFAULT_LAST_USED_FLUSH_MS,
    logger: opts.logger ?? app.log,
  });
  app.addHook('onClose', () => keys.close());

  const limit = opts.rateLimit ?? DEFAULT_RATE_LIMIT;
  if (limit) {
    // Before the auth hook: a flood is refused before any credential work (SPEC §4: 429 + Retry-After).
    await app.register(rateLimit, {
      max: limit.max,
      timeWindow: limit.timeWindowMs,
      keyGenerator: (request) => rateLimitKey(request.headers, request.ip),
      errorResponseBuilder: (_request, context) =>
        httpError(
          429,
          `Rate limit exceeded: at most ${context.max} requests per ${context.after}; retry later`,
          {
            code: 'RATE_LIMITED',
          },
        ),
    });
  }
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.decorateRequest('credential', null);
  app.addHook('onRequest', createAuthHook({ jwt: opts.jwt, keys }));

  const deps: ApiRouteDeps = {
    pool: opts.pool,
    analytics: createAnalyticsQueries(opts.ch),
    keys,
    now,
    retentionDays: opts.retentionDays,
  };
  await app.register(analyticsRoutes, deps);
  await app.register(logsRoutes, deps);
  await app.register(tenantRoutes, deps);
  // Tenant resources (SPEC part two): one encapsulated plugin each, see docs/architecture.md.
  await app.register(templateRoutes, deps);
  await app.register(suppressionRoutes, deps);
  await app.register(projectRoutes, deps);
  await app.register(contactRoutes, {
    ...deps,
    ...(opts.importMaxBytes === undefined ? {} : { importMaxBytes: opts.importMaxBytes }),
  });
  await app.register(campaignRoutes, deps);
  await app.register(sequenceRoutes, deps);
  if (opts.trackingSecret !== undefined) {
    await app.register(unsubscribeRoutes, { ...deps, trackingSecret: opts.trackingSecret });
  }
};
