import { readFileSync } from 'node:fs';
import { devTlsPair } from '@tern/api';
import { receivingTenants } from '@tern/domains';
import {
  createDmarcConsumer,
  createInboundListener,
  createRecipientResolver,
  dnsResolverOf,
  listRoutes,
  type ReceivedMessage,
} from '@tern/inbound';
import { type RuntimeContext, streamOf } from '../context.js';

/**
 * The inbound MX listener (SPEC §24); returns its port. Every stored message goes to the DMARC
 * aggregate report consumer (SPEC §26), then to `onReceived`, the hook for other consumers.
 */
export async function startInbound(
  ctx: RuntimeContext,
  onReceived?: (message: ReceivedMessage) => Promise<void>,
): Promise<number> {
  const { config, logger, publicUrl } = ctx;
  const hostname = config.inboundMxHost ?? new URL(publicUrl).hostname;
  const tls =
    config.smtpTlsCert !== undefined && config.smtpTlsKey !== undefined
      ? { cert: readFileSync(config.smtpTlsCert), key: readFileSync(config.smtpTlsKey) }
      : await devTlsPair(config.dataDir, hostname);
  const dmarc = createDmarcConsumer({ pool: ctx.pool, logger });
  const consume = async (message: ReceivedMessage) => {
    try {
      await dmarc(message);
    } finally {
      await onReceived?.(message);
    }
  };
  const listener = createInboundListener({
    pool: ctx.pool,
    keyring: ctx.keyring,
    log: streamOf(ctx),
    resolve: dnsResolverOf(config.dnsServers),
    host: config.host,
    port: config.inboundSmtpPort!,
    maxBytes: config.inboundMaxBytes,
    limits: config.smtpListenerLimits,
    hostname,
    tls,
    tenantsOf: createRecipientResolver({
      pool: ctx.pool,
      inboundDomain: config.inboundDomain,
      receivingTenants: (host) => receivingTenants(ctx.pool, host),
    }),
    routesOf: (tenantId) => listRoutes(ctx.pool, tenantId),
    logger,
    onReceived: consume,
  });
  const port = await listener.start();
  ctx.onClose('inbound', () => listener.stop());
  logger.info({ port }, 'inbound MX listening');
  return port;
}
