import { readFileSync } from 'node:fs';
import {
  createApiStores,
  createSendingApp,
  devTlsPair,
  type SubmissionServer,
  startSubmissionServer,
} from '@tern/api';
import type { FastifyInstance } from 'fastify';
import { type RuntimeContext, streamOf } from '../context.js';
import { jwtVerifierOf, rateLimitOf } from './api.js';

/**
 * SMTP submission (SPEC §22): each message goes through POST /emails/send of the api app in this
 * process, or — run alone — of a sending-only app with the same guards (never listened on).
 */
export async function startSubmission(ctx: RuntimeContext, app: FastifyInstance): Promise<SubmissionServer> {
  const { config, logger, publicUrl } = ctx;
  let target = app;
  if (!ctx.services.has('api')) {
    const sendingApp = await createSendingApp({
      pool: ctx.pool,
      stores: createApiStores(ctx.pool),
      jwt: jwtVerifierOf(config, ctx.secrets),
      retentionDays: config.retentionDays,
      rateLimit: rateLimitOf(config),
      logger,
      sending: { log: streamOf(ctx), keyring: ctx.keyring },
      domainPolicy: { requireVerified: ctx.requireVerifiedDomains },
    });
    ctx.onClose('submission-app', () => sendingApp.close());
    target = sendingApp;
  }
  const tls =
    config.smtpTlsCert !== undefined && config.smtpTlsKey !== undefined
      ? { cert: readFileSync(config.smtpTlsCert), key: readFileSync(config.smtpTlsKey) }
      : await devTlsPair(config.dataDir, new URL(publicUrl).hostname);
  const submission = await startSubmissionServer({
    app: target,
    port: config.smtpSubmissionPort!,
    host: config.host,
    tls,
    requireTls: config.nodeEnv === 'production',
    hostname: new URL(publicUrl).hostname,
    limits: config.smtpListenerLimits,
    logger,
  });
  ctx.onClose('submission', () => submission.close());
  return submission;
}
