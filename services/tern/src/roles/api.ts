import cluster from 'node:cluster';
import {
  type ContentBudget,
  createApiApp,
  createContentBudget,
  fastifyTrustProxy,
  type WebhookRouteOptions,
} from '@tern/api';
import { createJwtVerifier } from '@tern/auth';
import type { Config } from '@tern/config';
import { dashboardRoutes } from '@tern/dashboard';
import { installErrorHandlers, registerHealthRoutes, TERN_FASTIFY_OPTIONS } from '@tern/http';
import { lastBatchAt } from '@tern/read-models';
import {
  createDnsChecker,
  createSendingDomains,
  type SendingDomains,
  spfRecord,
} from '@tern/sending-domains';
import { createReadModelFeed } from '@tern/stores';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { capability, type RuntimeContext, type RuntimeSecrets, streamOf } from '../context.js';
import { DASHBOARD_DIR } from '../paths.js';

/** Requests an ingest worker serves on one keep-alive connection before asking the client to reconnect. */
export const CLUSTER_REQUESTS_PER_CONNECTION = 100;

export function jwtVerifierOf(config: Config, secrets: RuntimeSecrets) {
  const maxLifetimeMs = config.jwtMaxLifetimeDays * 24 * 3600 * 1000;
  return createJwtVerifier(
    secrets.jwtSecret
      ? { secret: secrets.jwtSecret, maxLifetimeMs }
      : config.jwtPublicKey
        ? { publicKey: config.jwtPublicKey, maxLifetimeMs }
        : { jwksUrl: config.jwtJwksUrl!, maxLifetimeMs },
  );
}

const budgets = new WeakMap<RuntimeContext, ContentBudget>();

/**
 * The process's one budget of message content in flight (SEND_CONTENT_MAX_MB[_PER_TENANT], issue 40
 * item 8), shared by the HTTP send routes and SMTP submission.
 */
export function contentBudgetOf(ctx: RuntimeContext): ContentBudget {
  let budget = budgets.get(ctx);
  if (!budget) {
    budget = createContentBudget({
      totalBytes: ctx.config.sendContentMaxMb * 1024 * 1024,
      perTenantBytes: ctx.config.sendContentMaxMbPerTenant * 1024 * 1024,
    });
    budgets.set(ctx, budget);
  }
  return budget;
}

/** The per-credential request limit of RATE_LIMIT_PER_MINUTE (0: none). */
export const rateLimitOf = (config: Config) =>
  config.rateLimitPerMinute > 0 ? { max: config.rateLimitPerMinute, timeWindowMs: 60_000 } : (false as const);

/**
 * Sending domains (SPEC §20): records fixed when a domain is added (api), and the poller that
 * re-checks them, started by the worker only (any number of instances share it through claims).
 */
export function sendingDomainsOf(ctx: RuntimeContext): SendingDomains {
  const { config, publicUrl } = ctx;
  const bounceMxHost = config.bounceMxHost ?? new URL(publicUrl).hostname;
  return createSendingDomains({
    pool: ctx.pool,
    log: streamOf(ctx),
    dns: createDnsChecker({ servers: config.dnsServers }),
    sealer: capability(ctx, 'dkimSealer'),
    records: {
      bounceSubdomain: config.bounceSubdomain,
      bounceMxHost,
      spf: spfRecord({
        spfInclude: config.spfInclude,
        relayHost: config.smtpUrl ? new URL(config.smtpUrl).hostname : undefined,
        fallbackHost: bounceMxHost,
      }),
    },
    inboundMxHost: config.inboundMxHost ?? new URL(publicUrl).hostname,
    now: () => new Date(),
    logger: ctx.logger,
    maxPerTenant: config.domainsMaxPerTenant,
  });
}

/**
 * The api role: the HTTP API, its OpenAPI document and the dashboard (mounted by the runtime).
 * HTTP only: the background jobs — the domains' re-checks too — are the worker's (roles/worker.ts).
 */
export async function startApi(ctx: RuntimeContext): Promise<FastifyInstance> {
  const { config, logger, pool, publicUrl } = ctx;
  const stream = streamOf(ctx);
  const domains = sendingDomainsOf(ctx);
  const webhooks: WebhookRouteOptions = {
    secretBox: capability(ctx, 'secretBox'),
    urlPolicy: { allowPrivate: config.webhookAllowPrivate },
  };
  // Repeated reads are memoised on what the read models' writers announce (issue 10): a
  // connection of its own on a server; PGlite's one session hears its own commits.
  const readModel = createReadModelFeed({
    pool,
    connection: ctx.pgStore.kind === 'pglite' ? 'shared' : 'dedicated',
    lastBatchAt,
    logger,
  });
  ctx.onClose('read-model-feed', () => readModel.close());
  const app = await createApiApp({
    data: { pool, ch: capability(ctx, 'ch'), readModel },
    jwt: jwtVerifierOf(config, ctx.secrets),
    policy: {
      retentionDays: config.retentionDays,
      eventStreamDays: config.eventStreamDays,
      openDedupSeconds: config.openDedupSeconds,
      domainPolicy: { requireVerified: ctx.requireVerifiedDomains },
    },
    limits: {
      sendRatePerSecond: config.sendRatePerSecond,
      sendRateMaxPerSecond: config.sendRateMaxPerSecond,
      rateLimit: rateLimitOf(config),
      eventStream: { pageCacheBytes: config.eventPageCacheMb * 1024 * 1024 },
    },
    features: {
      sending: {
        log: stream,
        keyring: ctx.keyring,
        contentBudget: contentBudgetOf(ctx),
      },
      trackingSecret: capability(ctx, 'trackingSecret'),
      webhooks,
      keyring: ctx.keyring,
      inboundDomain: config.inboundDomain,
      domains: { domains },
      providers: {
        sesTopicArns: config.sesTopicArns,
        sendgridPublicKey: config.sendgridWebhookPublicKey,
        postmark: config.postmarkWebhook,
        mailgunSigningKey: config.mailgunWebhookSigningKey,
        resendSecret: config.resendWebhookSecret,
      },
    },
    http: {
      logger,
      readiness: ctx.readiness,
      trustProxy: config.trustProxy,
      publicUrl,
      documentIngest: ctx.services.has('ingest'),
    },
  });
  return app;
}

/** The web dashboard (SPEC §18): static files over the same public API, on the same port. */
export async function mountDashboard(app: FastifyInstance): Promise<void> {
  await app.register(dashboardRoutes, { dir: DASHBOARD_DIR });
}

/** The HTTP server of a process without the api: `/health`, `/ready`, `/metrics` and the roles' own routes. */
export function createBareApp(ctx: RuntimeContext): FastifyInstance {
  const app = Fastify({
    ...TERN_FASTIFY_OPTIONS,
    loggerInstance: ctx.logger as FastifyBaseLogger,
    requestIdHeader: 'x-request-id',
    trustProxy: fastifyTrustProxy(ctx.config.trustProxy),
    // node:cluster hands out connections, not requests, round-robin: a keep-alive client would
    // stay with one worker for good. Renewing each connection after this many requests lets
    // the next one go to the next worker (issue 32; docs/deploy.md).
    ...(cluster.isWorker ? { maxRequestsPerSocket: CLUSTER_REQUESTS_PER_CONNECTION } : {}),
  });
  installErrorHandlers(app);
  registerHealthRoutes(app, ctx.readiness);
  return app;
}
