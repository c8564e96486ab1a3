import {
  advanceFanout,
  type CampaignRow,
  type ChunkEmail,
  campaignSource,
  claimCampaign,
  FANOUT_TABLE,
  fanoutChunk,
  listSegmentRecipients,
  recordChunk,
} from '@tern/bulk';
import { createLeasedJob, type LeasedJob, type LeasedJobContext } from '@tern/jobs';
import {
  type BulkJobOptions,
  type BulkMail,
  bulkEmailId,
  DEFAULT_BULK_LEASE_MS,
  resolveContent,
  tryComposeMail,
} from '../bulk/mail.js';

/**
 * The campaign fan-out (SPEC §15): a durable job on the campaign's own row.
 *
 * - **claim**: one statement takes a campaign that fell due (`scheduled` with `scheduled_at <= now`,
 *   or `sending` whose lease lapsed — its worker died) with `FOR UPDATE SKIP LOCKED` and a lease;
 *   the first claim stamps `snapshot_at` (the audience "at that moment": later contacts are out).
 * - **chunk**: the next `chunkSize` contacts after `fanout_cursor` (keyset on the contact id) that
 *   are in the audience, subscribed and not suppressed — or that already got this campaign's email
 *   (a redo after a crash keeps the same recipients); one `bulk_emails` row each (`ON CONFLICT DO
 *   NOTHING`), then the mails go to the send path, then the cursor moves (only while the lease is
 *   ours). The email id is derived from (tenant, campaign, contact): a chunk done twice produces
 *   the same ids, which the log, the projection and the sender drop.
 * - **finish**: a short chunk ends it: `sent`, `sent_at`.
 * - **pace** (SPEC §23): a campaign with `send_rate_per_minute` gives its emails due times
 *   `60 000 / rate` ms apart, continuing from `next_due_at`, which moves with the cursor (a redone
 *   chunk gets the same times; its rows exist already and keep theirs).
 *
 * Memory is one chunk; a kill at any point repeats at most the chunk in flight, without effect.
 */

/**
 * The email id of a campaign's contact: from the campaign's start (`snapshot_at`, stamped by the
 * first claim, so every redo derives the same) and the hash of (tenant, campaign, contact); the hash
 * alone for a campaign made before migration 0530, which may have handed ids over already.
 */
function emailIdOf(c: CampaignRow, source: string, contactId: string): string {
  return bulkEmailId(c.ordered_ids, c.snapshot_at, c.tenant_id, source, contactId);
}

/** The fan-out's lease (`DEFAULT_BULK_LEASE_MS`). */
export const DEFAULT_LEASE_MS = DEFAULT_BULK_LEASE_MS;

export interface CampaignFanoutOptions extends BulkJobOptions {
  chunkSize?: number;
  /** Called after each chunk is handed over (tests kill the process here). */
  onChunk?: (info: { campaignId: string; emails: number }) => void;
}

/** A leased job whose `runOnce` fans out every campaign that is due now; resolves with the emails handed over. */
export type CampaignFanout = LeasedJob;

export function createCampaignFanout(opts: CampaignFanoutOptions): CampaignFanout {
  const { pool, mailer, now } = opts;
  const chunkSize = opts.chunkSize ?? 500;
  const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;

  async function claim({ owner, leaseUntil }: LeasedJobContext): Promise<CampaignRow | null> {
    const at = now();
    const claimed = await claimCampaign(pool, owner, leaseUntil(at), at);
    // A segment is evaluated once, at the first claim (SPEC §27); a lost lease: the other goes on.
    return claimed === null ? null : listSegmentRecipients(pool, claimed, owner);
  }

  async function fanOut(c: CampaignRow, { owner, leaseUntil, stopping }: LeasedJobContext): Promise<number> {
    const source = campaignSource(c.id);
    const content = await resolveContent(pool, c.tenant_id, {
      templateId: c.template_id,
      subject: c.subject,
      html: c.html,
      text: c.text,
    });
    let cursor = c.fanout_cursor;
    let nextDue = c.next_due_at;
    const spacingMs = c.send_rate_per_minute === null ? null : 60_000 / c.send_rate_per_minute;
    let total = 0;
    for (;;) {
      const rows = await fanoutChunk(pool, c, cursor, source, chunkSize);
      const at = now();
      const base = nextDue === null || nextDue < at ? at : nextDue;
      if (rows.length > 0 && content !== null) {
        const mails: BulkMail[] = [];
        const mailContacts: string[] = [];
        const failed: ChunkEmail[] = [];
        for (const [i, r] of rows.entries()) {
          const id = emailIdOf(c, source, r.id);
          const composed = tryComposeMail({
            id,
            from: c.from_address,
            unsubscribeSource: source,
            tags: [source],
            templateId: c.template_id,
            source: content,
            recipient: r,
          });
          if ('mail' in composed) {
            mails.push({
              ...composed.mail,
              campaignId: c.id,
              ...(spacingMs === null ? {} : { dueAt: new Date(base.getTime() + Math.floor(i * spacingMs)) }),
            });
            mailContacts.push(r.id);
          } else {
            // Skipped and counted (stats.failed); the rest of the chunk goes out (issue 24, item 3).
            failed.push({ id, contact: r.id, failedReason: composed.failure });
            opts.logger?.warn(
              { campaignId: c.id, contactId: r.id, reason: composed.failure },
              'campaign recipient skipped: its message could not be composed',
            );
          }
        }
        await recordChunk(pool, c.tenant_id, source, at, [
          ...mails.map((m, i) => ({ id: m.id, contact: mailContacts[i]!, failedReason: '' })),
          ...failed,
        ]);
        if (mails.length > 0) await mailer.enqueue(c.tenant_id, mails, at);
        total += mails.length;
      }
      const done = rows.length < chunkSize;
      const last = rows.at(-1)?.id ?? cursor;
      if (spacingMs !== null) nextDue = new Date(base.getTime() + Math.floor(rows.length * spacingMs));
      const ours = await advanceFanout(pool, c, {
        done,
        cursor: last,
        at,
        owner,
        leaseUntil: leaseUntil(at),
        nextDue,
      });
      // Lease lost (this worker stalled past it and another took over): stop, the other goes on.
      if (!ours) return total;
      opts.onChunk?.({ campaignId: c.id, emails: rows.length });
      if (done) return total;
      cursor = last;
      if (stopping()) return total;
    }
  }

  return createLeasedJob({
    name: 'campaign-fanout',
    pool,
    table: FANOUT_TABLE,
    leaseMs,
    pollIntervalMs: opts.pollIntervalMs ?? 1000,
    async run(job) {
      let total = 0;
      for (;;) {
        if (job.stopping()) return total;
        const campaign = await claim(job);
        if (campaign === null) return total;
        total += await fanOut(campaign, job);
      }
    },
    onError: (error) => opts.logger?.error({ err: error }, 'campaign fan-out failed; retried'),
  });
}
