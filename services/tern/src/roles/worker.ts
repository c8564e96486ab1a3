import {
  createAutomationRunner,
  createCampaignFanout,
  createRetentionJob,
  createSequenceScheduler,
  outgoingMailer,
} from '@tern/worker';
import { capability, type RuntimeContext, streamOf } from '../context.js';
import { sendingDomainsOf } from './api.js';

/**
 * The worker role: the background jobs, out of the api (issue 25, item 5) — physical deletion of
 * expired entries, campaign fan-out, sequence steps and automation runs (SPEC §14, §15, §27). Any number of instances:
 * retention runs in one at a time (advisory lock), fan-out and steps are durable jobs in Postgres
 * shared through leases (SKIP LOCKED). Their emails take the send path of POST /emails/send
 * (outgoing_emails, then email.queued; the sender does the rest). And the sending domains'
 * DNS re-checks (SPEC §20), shared the same way (claims).
 */
export function startWorker(ctx: RuntimeContext): void {
  const { config, logger, pool } = ctx;
  const domains = sendingDomainsOf(ctx);
  domains.start();
  ctx.onClose('domain-checks', () => domains.stop());
  const retention = createRetentionJob({
    pool,
    ch: capability(ctx, 'ch'),
    now: () => new Date(),
    defaultRetentionDays: config.retentionDays,
    eventStreamDays: config.eventStreamDays,
    keyring: ctx.keyring,
    logger,
  });
  retention.start();
  ctx.onClose('retention-job', async () => retention.stop());
  const bulk = {
    pool,
    mailer: outgoingMailer(pool, streamOf(ctx)),
    now: () => new Date(),
    logger,
  };
  const fanout = createCampaignFanout(bulk);
  const sequences = createSequenceScheduler(bulk);
  fanout.start();
  const automations = createAutomationRunner(bulk);
  sequences.start();
  automations.start();
  ctx.onClose('campaign-fanout', () => fanout.stop());
  ctx.onClose('sequence-scheduler', () => sequences.stop());
  ctx.onClose('automation-runner', () => automations.stop());
}
