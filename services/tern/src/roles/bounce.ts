import { createBounceMailbox } from '@tern/bounce';
import { capability, type RuntimeContext, streamOf } from '../context.js';

/** The bounce mailbox role (SPEC §21): DSNs and ARF reports read into delivery feedback; returns its port. */
export async function startBounce(ctx: RuntimeContext): Promise<number> {
  const { config, logger } = ctx;
  const bounce = createBounceMailbox({
    pool: ctx.pool,
    log: streamOf(ctx),
    secret: capability(ctx, 'trackingSecret'),
    bounceDomain: config.bounceDomain,
    host: config.host,
    port: config.bounceSmtpPort!,
    maxBytes: config.bounceSmtpMaxBytes,
    ratePerMinute: config.bounceSmtpRatePerMinute,
    limits: config.smtpListenerLimits,
    hostname: config.bounceMxHost ?? new URL(ctx.publicUrl).hostname,
    logger,
  });
  const port = await bounce.start();
  ctx.onClose('bounce', () => bounce.stop());
  logger.info({ port }, 'bounce mailbox listening');
  return port;
}
