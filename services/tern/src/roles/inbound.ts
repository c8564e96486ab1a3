import { readFileSync } from 'node:fs';
import { devTlsPair } from '@tern/api';
import { recordContactEvent } from '@tern/bulk';
import {
  createDmarcConsumer,
  createInboundListener,
  createInboundSweeper,
  createRecipientResolver,
  dnsResolverOf,
  type ForwardSender,
  type ReceiveDeps,
  type ReceivedMessage,
} from '@tern/inbound';
import { decodeAttachments, enqueueSends } from '@tern/sending';
import { receivingTenants, unverifiedDomains, verifiedDomainNames } from '@tern/sending-domains';
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
  const forward = forwardSender(ctx);
  const { onReceived: consume } = arrivalSteps(ctx.pool, logger, onReceived);
  const listener = createInboundListener({
    pool: ctx.pool,
    keyring: ctx.keyring,
    log: streamOf(ctx),
    forward,
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
    logger,
    onReceived: consume,
  });
  // Stored mail whose email.received never reached the log and whose MTA did not retry.
  const sweeper = createInboundSweeper({
    pool: ctx.pool,
    keyring: ctx.keyring,
    log: streamOf(ctx),
    forward,
    logger,
    onReceived: consume,
  });
  const port = await listener.start();
  sweeper.start();
  ctx.onClose('inbound', async () => {
    await listener.stop();
    await sweeper.stop();
  });
  logger.info({ port }, 'inbound MX listening');
  return port;
}

/**
 * What an arrival does in Tern beyond the listener's own pipeline (which stores it, reads the
 * tenant's routes in the same round trip and acts on them): each stored message to the DMARC
 * aggregate report consumer (SPEC §26), the `email.received` automation trigger (SPEC §27) and
 * `onReceived`. The listener and the sweeper run them; `npm run bench -- inbound` runs the same
 * (issue 43: the bench measures what a deployment runs).
 */
export function arrivalSteps(
  pool: RuntimeContext['pool'],
  logger: NonNullable<ReceiveDeps['logger']>,
  onReceived?: (message: ReceivedMessage) => Promise<void>,
): Required<Pick<ReceiveDeps, 'onReceived'>> {
  const dmarc = createDmarcConsumer({ pool, logger });
  return {
    onReceived: async (message) => {
      try {
        await dmarc(message);
      } finally {
        try {
          await triggerAutomations(pool, message);
        } finally {
          await onReceived?.(message);
        }
      }
    },
  };
}

/**
 * `email.received` as an automation trigger (SPEC §27, docs/automations.md): a message from one of
 * the tenant's contacts goes to the trigger inbox under its own id (`inb_…`), once: an MTA's retry
 * of a message whose steps all ran (`fresh: false`) triggers nothing again, and a redo after a
 * failure before its row was marked announced records the same inbox id, from which the runs' ids
 * are derived (nothing started twice). A message from an address that is no contact, or dropped by
 * a route, triggers nothing.
 */
async function triggerAutomations(pool: RuntimeContext['pool'], message: ReceivedMessage): Promise<void> {
  if (!message.fresh) return;
  await recordContactEvent(pool, {
    tenantId: message.tenantId,
    id: message.id,
    name: 'email.received',
    email: message.from,
    at: message.receivedAt,
  });
}

/** A display name without the characters that would end it. */
const displayName = (s: string) => s.replace(/["\\\r\n<>]/g, '').slice(0, 200);

/**
 * The `forward` route action on the one send path (SPEC §24, docs/inbound.md "Forwarding"): From the
 * receiving address when a verified domain of the tenant covers it, else `forwarding@` the tenant's
 * oldest verified domain (any receiving address when verification is not required), named
 * "<sender> via <receiving address>"; Reply-To the original sender; the original's subject, text,
 * html and attachments. Queued like `POST /emails/send` (`enqueueSends`), idempotent per email id.
 */
function forwardSender(ctx: RuntimeContext): ForwardSender {
  const { pool } = ctx;
  async function fromAddress(tenantId: string, recipient: string): Promise<string> {
    if (!ctx.requireVerifiedDomains) return recipient;
    if ((await unverifiedDomains(pool, tenantId, [recipient])).length === 0) return recipient;
    const [domain] = await verifiedDomainNames(pool, tenantId, 1);
    // None: queued all the same; the sender refuses it (DOMAIN_NOT_VERIFIED) into the tenant's log.
    return domain === undefined ? recipient : `forwarding@${domain}`;
  }
  return async (f) => {
    const address = await fromAddress(f.tenantId, f.recipient);
    const { files, meta } = decodeAttachments(
      f.attachments.map((a) => ({
        filename: a.filename,
        contentType: a.contentType,
        content: a.content.toString('base64'),
        ...(a.contentId ? { contentId: a.contentId } : {}),
      })),
    );
    await enqueueSends(
      pool,
      streamOf(ctx),
      f.tenantId,
      [
        {
          id: f.emailId,
          message: {
            from: `"${displayName(f.sender.name ?? f.sender.address)} via ${f.recipient}" <${address}>`,
            to: f.to,
            replyTo: f.sender.address,
            subject: f.subject,
            ...(f.html !== null ? { html: f.html } : {}),
            ...(f.text !== null ? { text: f.text } : {}),
            headers: f.headers,
            tags: ['inbound-forward'],
            ...(meta.length > 0 ? { attachments: meta } : {}),
          },
          subject: f.subject,
          templateId: null,
          dueAt: f.at,
          scheduledAt: null,
          projectId: null,
          ...(files.length > 0 ? { files } : {}),
        },
      ],
      f.at,
      ctx.keyring,
    );
  };
}
