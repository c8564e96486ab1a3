import { hash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import { HttpError, httpError } from '@tern/http';
import { createInboundReader } from '@tern/inbound';
import { createAnalyticsQueries, createBreakdownQueries } from '@tern/read-models';
import { createApiKeyStore } from '@tern/tenant-settings';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { breakdownRoutes } from './analytics/breakdown-routes.js';
import { analyticsRoutes } from './analytics/routes.js';
import type { ApiFeatures, ApiLimits, ApiRoutesOptions } from './api-options.js';
import { eraseRoutes } from './contacts/erase-routes.js';
import { contactRoutes } from './contacts/routes.js';
import { createAuthHook } from './credentials.js';
import { createFromDomainCheck } from './domains/policy.js';
import { domainRoutes } from './domains/routes.js';
import { emailReadRoutes } from './emails/read-routes.js';
import { emailRoutes } from './emails/routes.js';
import { eventRoutes } from './events/routes.js';
import { inboundCutoff } from './inbound/cutoff.js';
import { inboundRouteRoutes } from './inbound/route-routes.js';
import { inboundRoutes } from './inbound/routes.js';
import { logsRoutes } from './logs/routes.js';
import { mcpRoutes } from './mcp/routes.js';
import { providerRoutes } from './providers/routes.js';
import { createReadContexts } from './read-context.js';
import type { ResourceModule } from './resource-kit.js';
import { RESOURCES } from './resources.generated.js';
import type { ApiRouteDeps } from './route-deps.js';
import { createApiStores } from './stores.js';
import { tenantRoutes } from './tenant-routes.js';
import { trackingRoutes } from './tracking/routes.js';
import { refuseUnstorableInput } from './unstorable-input.js';
import { unsubscribeRoutes } from './unsubscribe/routes.js';
import { webhookRoutes } from './webhooks/routes.js';

export const DEFAULT_RATE_LIMIT = { max: 1200, timeWindowMs: 60_000 } as const;

/**
 * The credential a request presents, normalised so that every spelling of the same key or token
 * (`X-API-Key` or `Authorization`, any scheme case, extra spaces) lands in one bucket.
 */
export function presentedCredential(headers: Record<string, string | string[] | undefined>): string | null {
  const apiKey = headers['x-api-key'];
  const fromKey =
    typeof apiKey === 'string' ? apiKey.trim() : Array.isArray(apiKey) ? apiKey.join(',').trim() : '';
  const authorization = headers.authorization;
  const fromAuth =
    typeof authorization === 'string'
      ? (/^\s*\S+\s+(.*?)\s*$/.exec(authorization)?.[1] ?? authorization.trim())
      : '';
  return fromAuth || fromKey || null;
}

/**
 * Whom a request is counted against: its credential (hashed, never kept in clear), else its
 * address — public routes (unsubscribe links, the dashboard's files) in a bucket of their own, so
 * a flood without credential at the API does not lock an address out of its unsubscribe links.
 */
function rateLimitKey(request: FastifyRequest): string {
  if (request.routeOptions.config.auth === undefined) return `pub:${request.ip}`;
  const credential = presentedCredential(request.headers);
  // One-shot `crypto.hash` (no Hash object per request): ≈ 0.3 µs against 0.8–1.2 µs.
  return credential ? `c:${hash('sha256', credential, 'base64url')}` : `ip:${request.ip}`;
}

/** "minute", "10 seconds", "hour": the window a 429 names (not the seconds left in it). */
export function describeWindow(ms: number): string {
  const units: [number, string][] = [
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  for (const [size, name] of units) {
    if (ms % size === 0) return ms === size ? name : `${ms / size} ${name}s`;
  }
  return `${ms} ms`;
}

/**
 * Refused credentials counted per client address (issue 9 item 3, issue 24 item 5): once an
 * address has had `max` refusals in a window, what it presents is still checked, but a refusal is
 * answered 429 instead of 401 — key guessing learns nothing more, while a valid JWT or key from
 * the same address (another tenant behind the same NAT or proxy) is served. A request with no
 * credential at all is refused 429 at once, before any lookup. Public routes (tracking pixel,
 * click and unsubscribe links) are never limited by it. Fixed windows in memory, bounded size.
 */
export function createFailureLimiter(limit: { max: number; timeWindowMs: number }, now = Date.now) {
  const windows = new Map<string, { count: number; resetAt: number }>();
  const MAX_ADDRESSES = 100_000;
  return {
    /** Seconds until the address may try again, or 0 when it is under the limit. */
    retryAfter(ip: string): number {
      const w = windows.get(ip);
      if (!w) return 0;
      const t = now();
      if (t >= w.resetAt) {
        windows.delete(ip);
        return 0;
      }
      return w.count >= limit.max ? Math.max(1, Math.ceil((w.resetAt - t) / 1000)) : 0;
    },
    fail(ip: string): void {
      const t = now();
      const w = windows.get(ip);
      if (w && t < w.resetAt) w.count++;
      else {
        if (windows.size >= MAX_ADDRESSES) {
          for (const [key, value] of windows) if (t >= value.resetAt) windows.delete(key);
          if (windows.size >= MAX_ADDRESSES) windows.clear();
        }
        windows.set(ip, { count: 1, resetAt: t + limit.timeWindowMs });
      }
    },
  };
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
  const { data, policy } = opts;
  const limits: ApiLimits = opts.limits ?? {};
  const features: ApiFeatures = opts.features ?? {};
  const keyCacheTtlMs = limits.keyCacheTtlMs ?? DEFAULT_KEY_CACHE_TTL_MS;
  if (!(keyCacheTtlMs >= 0 && keyCacheTtlMs <= MAX_KEY_CACHE_TTL_MS)) {
    throw new Error(
      `keyCacheTtlMs must be 0..${MAX_KEY_CACHE_TTL_MS} (SPEC §8: revocations apply within 5 s)`,
    );
  }
  if (!(policy.retentionDays >= 1 && Number.isInteger(policy.retentionDays))) {
    throw new Error('retentionDays must be a positive integer');
  }
  const now = policy.now ?? (() => new Date());
  const keys = createApiKeyStore({
    pool: data.pool,
    now,
    cacheTtlMs: keyCacheTtlMs,
    lastUsedFlushMs: limits.lastUsedFlushMs ?? DEFAULT_LAST_USED_FLUSH_MS,
    logger: opts.logger ?? app.log,
  });
  app.addHook('onClose', () => keys.close());

  const limit = limits.rateLimit ?? DEFAULT_RATE_LIMIT;
  let failures: ReturnType<typeof createFailureLimiter> | undefined;
  let limitedError: HttpError | undefined;
  if (limit) {
    const window = describeWindow(limit.timeWindowMs);
    const limited = (max: number) =>
      httpError(429, `Rate limit exceeded: at most ${max} requests per ${window}; retry later`, {
        code: 'RATE_LIMITED',
      });
    await app.register(rateLimit, {
      global: false,
      max: limit.max,
      timeWindow: limit.timeWindowMs,
      keyGenerator: rateLimitKey,
      errorResponseBuilder: (_request, context) => limited(context.max),
    });
    // Hooks of this context run in the order added and before route-level ones: the limits count
    // every request BEFORE the auth hook (issue 9, item 3), refused ones included.
    failures = createFailureLimiter(limit);
    const overLimit = failures;
    // Callback hooks (this one, the onResponse below): no promise per request (issue 29).
    app.addHook('onRequest', (request, reply, done) => {
      // Public routes (tracking, unsubscribe links) take no credential: never locked out by it.
      if (request.routeOptions.config.auth === undefined) return done();
      const wait = overLimit.retryAfter(request.ip);
      // Nothing presented cannot be valid: refused at once, no lookup.
      if (wait > 0 && presentedCredential(request.headers) === null) {
        reply.header('retry-after', String(wait));
        return done(limitedError);
      }
      done();
    });
    const perRequest = app.rateLimit();
    // `config.rateLimit: false` (the tracking pixel and click links) opts a route out. A callback
    // hook around the limiter's promise: no second promise per request (issue 45 item 5).
    app.addHook('onRequest', function (this: typeof app, request, reply, done) {
      if (request.routeOptions.config.rateLimit === false) return done();
      perRequest.call(this, request, reply).then(() => done(), done);
    });
    app.addHook('onResponse', (request, reply, done) => {
      if (reply.statusCode === 401) overLimit.fail(request.ip);
      done();
    });
    limitedError = limited(limit.max);
  }
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.decorateRequest('credential', null);
  const authHook = createAuthHook({ jwt: opts.jwt, keys });
  // A callback hook around the auth hook's promise: no second promise per request (issue 45 item 5).
  app.addHook('onRequest', (request, reply, done) => {
    authHook(request).then(
      () => done(),
      (error: unknown) => {
        // Over its refusal budget, an address gets 429 for a refused credential; a valid one passed.
        const wait = failures?.retryAfter(request.ip) ?? 0;
        if (wait > 0 && error instanceof HttpError && error.statusCode === 401) {
          reply.header('retry-after', String(wait));
          return done(limitedError);
        }
        done(error as Error);
      },
    );
  });
  app.addHook('preHandler', refuseUnstorableInput);

  const deps = {
    ...createApiStores(data.pool, data.stores),
    pool: data.pool,
    analytics: createAnalyticsQueries(data.ch),
    breakdown: createBreakdownQueries(data.ch),
    keys,
    now,
    retentionDays: policy.retentionDays,
    sendRatePerSecond: limits.sendRatePerSecond ?? 0,
    sendRateMaxPerSecond: limits.sendRateMaxPerSecond ?? 0,
    readModel: createReadContexts(data.pool, data.readModel),
    webhooks: features.webhooks,
    domainPolicy: policy.domainPolicy,
    fromDomains: createFromDomainCheck(data.pool, policy.domainPolicy),
    eventStreamDays: policy.eventStreamDays ?? 30,
    eventStream: limits.eventStream,
  } satisfies ApiRouteDeps;
  if (opts.surface === 'sending') {
    if (!features.sending) throw new Error('surface "sending" needs the sending deps');
    await app.register(emailRoutes, { ...deps, sending: features.sending });
    await app.register(emailReadRoutes, { ...deps, sending: features.sending });
    return;
  }
  await app.register(analyticsRoutes, deps);
  await app.register(breakdownRoutes, deps);
  await app.register(logsRoutes, deps);
  await app.register(eventRoutes, deps);
  await app.register(tenantRoutes, deps);
  // Tenant resources (SPEC part two): one encapsulated plugin each, see docs/architecture.md.
  await app.register(contactRoutes, {
    ...deps,
    ...(limits.importMaxBytes === undefined ? {} : { importMaxBytes: limits.importMaxBytes }),
  });
  // Every `defineResource` (resources.generated.ts); the type says each plugin takes these deps.
  const resources: ReadonlyArray<Pick<ResourceModule<string, typeof deps>, 'routes'>> = RESOURCES;
  for (const resource of resources) await app.register(resource.routes, deps);
  if (features.keyring) {
    await app.register(eraseRoutes, {
      ...deps,
      keyring: features.keyring,
      ...(policy.erasureRescrubMs !== undefined ? { rescrubAfterMs: policy.erasureRescrubMs } : {}),
    });
  }
  if (features.trackingSecret !== undefined) {
    const keyring = features.keyring;
    await app.register(unsubscribeRoutes, {
      ...deps,
      trackingSecret: features.trackingSecret,
      ...(keyring ? { recipientHash: (t: string, e: string) => keyring.recipientHash(t, e) } : {}),
    });
  }
  if (features.webhooks) await app.register(webhookRoutes, { ...deps, webhooks: features.webhooks });
  if (features.domains) await app.register(domainRoutes, { ...deps, domains: features.domains });
  if (features.keyring) {
    await app.register(inboundRoutes, {
      inbound: {
        pool: deps.pool,
        reader: createInboundReader(deps.pool, features.keyring, {
          cutoffOf: inboundCutoff(
            async (tenantId) => (await deps.readModel.get(tenantId)).retentionOverride,
            now,
            policy.retentionDays,
          ),
        }),
        inboundDomain: features.inboundDomain,
      },
    });
    await app.register(inboundRouteRoutes, { pool: deps.pool });
  }
  if (features.sending) {
    await app.register(emailRoutes, { ...deps, sending: features.sending });
    await app.register(emailReadRoutes, { ...deps, sending: features.sending });
    if (features.trackingSecret !== undefined) {
      await app.register(trackingRoutes, {
        ...deps,
        sending: features.sending,
        trackingSecret: features.trackingSecret,
        ...(policy.openDedupSeconds !== undefined ? { openDedupSeconds: policy.openDedupSeconds } : {}),
      });
    }
    if (features.providers) {
      await app.register(providerRoutes, {
        ...deps,
        sending: features.sending,
        providers: features.providers,
      });
    }
  }
  // The MCP server (SPEC §28): its tools call the routes above with the caller's credential.
  await app.register(mcpRoutes);
};
