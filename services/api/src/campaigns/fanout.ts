import { randomBytes } from 'node:crypto';
import type { Logger } from '@tern/jobs';
import { claimDue, createPoller } from '@tern/jobs';
import type pg from 'pg';
import {
  type BulkMail,
  type BulkMailer,
  type ComposeFailure,
  derivedEmailId,
  type Recipient,
  resolveContent,
  tryComposeMail,
} from '../bulk/mail.js';
import { reachableContactSql } from '../contacts/store.js';
import { type CampaignRow, campaignSource } from './store.js';

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
 * How long a claimed job stays another worker's. Each chunk renews it; a worker killed mid-way
 * hands its job over after this long. A worker slower than that loses the job to another, which
 * repeats at most the chunk in flight (same email ids: no effect).
 */
export const DEFAULT_LEASE_MS = 15_000;

export interface CampaignFanoutOptions {
  pool: pg.Pool;
  mailer: BulkMailer;
  now: () => Date;
  publicUrl: string;
  trackingSecret: string;
  chunkSize?: number;
  leaseMs?: number;
  pollIntervalMs?: number;
  logger?: Logger;
  /** Called after each chunk is handed over (tests kill the process here). */
  onChunk?: (info: { campaignId: string; emails: number }) => void;
}

export interface CampaignFanout {
  /** Fans out every campaign that is due now; resolves with the emails handed over. */
  runOnce(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

export function createCampaignFanout(opts: CampaignFanoutOptions): CampaignFanout {
  const { pool, mailer, now } = opts;
  const chunkSize = opts.chunkSize ?? 500;
  const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  const owner = `fanout-${randomBytes(8).toString('hex')}`;
  let stopped = false;

  async function claim(): Promise<CampaignRow | null> {
    const at = now();
    const rows = await claimDue<CampaignRow>(
      pool,
      {
        table: 'campaigns',
        alias: 'c',
        keys: ['tenant_id', 'id'],
        due: `((status = 'scheduled' AND scheduled_at <= $3) OR status = 'sending')
              AND (lease_until IS NULL OR lease_until < $3)`,
        orderBy: 'scheduled_at NULLS FIRST',
        limit: 1,
        set: `status = 'sending', lease_owner = $1, lease_until = $2, snapshot_at = COALESCE(c.snapshot_at, $3),
              updated_at = $3`,
      },
      [owner, new Date(at.getTime() + leaseMs), at],
    );
    return rows[0] ?? null;
  }

  async function fanOut(c: CampaignRow): Promise<number> {
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
      const { rows } = await pool.query<Recipient>(
        `SELECT ct.id, ct.email, ct.first_name, ct.last_name, ct.attributes
           FROM contacts ct
          WHERE ct.tenant_id = $1 AND ct.audiences @> ARRAY[$2::text] AND ct.created_at <= $3
            AND ($4::text IS NULL OR ct.id > $4)
            AND (${reachableContactSql('ct')}
                 OR EXISTS (SELECT 1 FROM bulk_emails b
                             WHERE b.tenant_id = ct.tenant_id AND b.source = $5 AND b.contact_id = ct.id))
          ORDER BY ct.id
          LIMIT $6`,
        [c.tenant_id, c.audience, c.snapshot_at, cursor, source, chunkSize],
      );
      const at = now();
      const base = nextDue === null || nextDue < at ? at : nextDue;
      if (rows.length > 0 && content !== null) {
        const mails: BulkMail[] = [];
        const mailContacts: string[] = [];
        const failed: { id: string; contact: string; reason: ComposeFailure }[] = [];
        for (const [i, r] of rows.entries()) {
          const id = derivedEmailId(c.tenant_id, source, r.id);
          const composed = tryComposeMail({
            tenantId: c.tenant_id,
            id,
            from: c.from_address,
            unsubscribeSource: source,
            tags: [source],
            templateId: c.template_id,
            source: content,
            recipient: r,
            publicUrl: opts.publicUrl,
            trackingSecret: opts.trackingSecret,
          });
          if ('mail' in composed) {
            mails.push({
              ...composed.mail,
              ...(spacingMs === null ? {} : { dueAt: new Date(base.getTime() + Math.floor(i * spacingMs)) }),
            });
            mailContacts.push(r.id);
          } else {
            // Skipped and counted (stats.failed); the rest of the chunk goes out (issue 24, item 3).
            failed.push({ id, contact: r.id, reason: composed.failure });
            opts.logger?.warn(
              { campaignId: c.id, contactId: r.id, reason: composed.failure },
              'campaign recipient skipped: its message could not be composed',
            );
          }
        }
        await pool.query(
          `INSERT INTO bulk_emails (tenant_id, email_id, source, step, contact_id, created_at, failed_reason)
           SELECT $1, e, $2, 0, ct, $3, NULLIF(why, '') FROM unnest($4::text[], $5::text[], $6::text[]) AS u(e, ct, why)
           ON CONFLICT (tenant_id, email_id) DO NOTHING`,
          [
            c.tenant_id,
            source,
            at,
            [...mails.map((m) => m.id), ...failed.map((f) => f.id)],
            [...mailContacts, ...failed.map((f) => f.contact)],
            [...mails.map(() => ''), ...failed.map((f) => f.reason)],
          ],
        );
        if (mails.length > 0) await mailer.enqueue(c.tenant_id, mails, at);
        total += mails.length;
      }
      const done = rows.length < chunkSize;
      const last = rows.at(-1)?.id ?? cursor;
      if (spacingMs !== null) nextDue = new Date(base.getTime() + Math.floor(rows.length * spacingMs));
      const { rowCount } = await pool.query(
        done
          ? `UPDATE campaigns SET fanout_cursor = $3, status = 'sent', sent_at = $4, lease_owner = NULL,
                    lease_until = NULL, updated_at = $4
              WHERE tenant_id = $1 AND id = $2 AND lease_owner = $5 AND status = 'sending'`
          : `UPDATE campaigns SET fanout_cursor = $3, lease_until = $6, next_due_at = $7, updated_at = $4
              WHERE tenant_id = $1 AND id = $2 AND lease_owner = $5 AND status = 'sending'`,
        done
          ? [c.tenant_id, c.id, last, at, owner]
          : [c.tenant_id, c.id, last, at, owner, new Date(at.getTime() + leaseMs), nextDue],
      );
      // Lease lost (this worker stalled past it and another took over): stop, the other goes on.
      if ((rowCount ?? 0) === 0) return total;
      opts.onChunk?.({ campaignId: c.id, emails: rows.length });
      if (done) return total;
      cursor = last;
      if (stopped) return total;
    }
  }

  async function runOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      if (stopped) return total;
      const campaign = await claim();
      if (campaign === null) return total;
      total += await fanOut(campaign);
    }
  }

  const pollIntervalMs = opts.pollIntervalMs ?? 1000;
  const poller = createPoller({
    name: 'campaign-fanout',
    intervalMs: pollIntervalMs,
    firstRunMs: pollIntervalMs,
    run: runOnce,
    onError: (error) => opts.logger?.error({ err: error }, 'campaign fan-out failed; retried'),
  });

  return {
    runOnce,
    start() {
      stopped = false;
      poller.start();
    },
    async stop() {
      stopped = true;
      await poller.stop();
      // A graceful stop hands its campaigns back at once (a killed worker's lease simply lapses).
      await pool
        .query(`UPDATE campaigns SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1`, [owner])
        .catch(() => undefined);
    },
  };
}
