import { NotReadyError } from '@tern/http';
import { suppressionCheck, suppressionCheckMany } from '@tern/read-models';
import { createSandboxProvider, createSender, createSmtpProvider } from '@tern/sender';
import { createSigningKeys } from '@tern/sending-domains';
import { getTemplate } from '@tern/templates';
import { capability, type RuntimeContext, streamOf } from '../context.js';

/** The sender role: the queue of outgoing mail, sent through the provider, outcomes appended to the log. */
export async function startSender(ctx: RuntimeContext): Promise<void> {
  const { config, logger, metrics, pool } = ctx;
  const senderOptions = ctx.options.sender ?? {};
  const sender = createSender({
    pool,
    log: streamOf(ctx),
    provider: config.smtpUrl
      ? createSmtpProvider({
          url: config.smtpUrl,
          pool:
            config.smtpMaxConnections === 0
              ? false
              : {
                  maxConnections: config.smtpMaxConnections,
                  maxMessages: config.smtpMaxMessages,
                  startConnections: config.smtpStartConnections,
                },
        })
      : createSandboxProvider({ pool }),
    isSuppressed: suppressionCheck(ctx.keyring),
    keyring: ctx.keyring,
    suppressedAmong: suppressionCheckMany(ctx.keyring),
    getTemplate,
    signingKeys: createSigningKeys({ pool, sealer: capability(ctx, 'dkimSealer') }),
    requireVerifiedDomain: ctx.requireVerifiedDomains,
    tracking: { secret: capability(ctx, 'trackingSecret'), publicUrl: ctx.publicUrl },
    bounceDomain: config.bounceDomain,
    logger,
    onProviderFault: (fault) => metrics.providerFaults.inc({ step: fault.step, code: fault.code }),
    defaultSendRatePerSecond: config.sendRatePerSecond,
    maxSendRatePerSecond: config.sendRateMaxPerSecond,
    ...(senderOptions.retryDelaysMs ? { retryDelaysMs: senderOptions.retryDelaysMs } : {}),
    ...(senderOptions.pollIntervalMs ? { pollIntervalMs: senderOptions.pollIntervalMs } : {}),
    ...(senderOptions.leaseMs ? { leaseMs: senderOptions.leaseMs } : {}),
  });
  await sender.start();
  ctx.running.sender = sender;
  ctx.onClose('sender', () => sender.stop());
  // A relay that refuses Tern (a wrong password, unreachable, refusing the envelope sender)
  // makes the instance not ready: its mail is only retried (issue 24 item 13).
  ctx.readiness.push({
    name: 'mail-provider',
    check: async () => {
      const health = sender.providerHealth();
      if (health.failing)
        throw new NotReadyError(
          `mail provider failing since ${health.since.toISOString()}: ${health.fault.step} → ${health.fault.code} (${health.faults} in a row)`,
        );
    },
  });
}
