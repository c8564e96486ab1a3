import { readFileSync } from 'node:fs';
import {
  createApiKeyStore,
  createSendingApp,
  DEFAULT_KEY_CACHE_TTL_MS,
  DEFAULT_LAST_USED_FLUSH_MS,
  devTlsPair,
  type SubmissionServer,
  startSubmissionServer,
} from '@tern/api';
import type { FastifyInstance } from 'fastify';
import { type RuntimeContext, streamOf } from '../context.js';
import { contentBudgetOf, jwtVerifierOf, rateLimitOf } from './api.js';

/**
 * SMTP submission (SPEC §22): each message goes through POST /emails/send of the api app in this
 * process, or — run alone — of a sending-only app with the same guards (never listened on).
 */
export async function startSubmission(ctx: RuntimeContext, app: FastifyInstance): Promise<SubmissionServer> {
  const { config, logger, publicUrl } = ctx;
  let target = app;
  if (!ctx.services.has('api')) {
    const sendingApp = await createSendingApp({
      data: { pool: ctx.pool },
      jwt: jwtVerifierOf(config, ctx.secrets),
      policy: {
        retentionDays: config.retentionDays,
        domainPolicy: { requireVerified: ctx.requireVerifiedDomains },
      },
      limits: { rateLimit: rateLimitOf(config) },
      sending: { log: streamOf(ctx), keyring: ctx.keyring, contentBudget: contentBudgetOf(ctx) },
      logger,
    });
    ctx.onClose('submission-app', () => sendingApp.close());
    target = sendingApp;
  }
  const tls =
    config.smtpTlsCert !== undefined && config.smtpTlsKey !== undefined
      ? { cert: readFileSync(config.smtpTlsCert), key: readFileSync(config.smtpTlsKey) }
      : await devTlsPair(config.dataDir, new URL(publicUrl).hostname);
  // The tenant of a connection's key, for the content budget it shares with the HTTP send routes
  // (the key was checked by POST /emails/send already; cached as the api caches keys).
  const keys = createApiKeyStore({
    pool: ctx.pool,
    now: () => new Date(),
    cacheTtlMs: DEFAULT_KEY_CACHE_TTL_MS,
    lastUsedFlushMs: DEFAULT_LAST_USED_FLUSH_MS,
    logger,
  });
  ctx.onClose('submission-keys', () => keys.close());
  const submission = await startSubmissionServer({
    app: target,
    port: config.smtpSubmissionPort!,
    host: config.host,
    tls,
    requireTls: config.nodeEnv === 'production',
    hostname: new URL(publicUrl).hostname,
    limits: config.smtpListenerLimits,
    contentBudget: {
      budget: contentBudgetOf(ctx),
      tenantOf: async (key) => (await keys.authenticate(key))?.tenantId ?? null,
    },
    logger,
  });
  ctx.onClose('submission', () => submission.close());
  return submission;
}
