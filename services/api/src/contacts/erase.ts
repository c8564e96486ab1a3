import { createHash } from 'node:crypto';
import type { ErasureResult } from '@tern/contracts';
import type { Keyring } from '@tern/privacy';
import { notifyReadModel } from '@tern/stores';
import type pg from 'pg';

/**
 * Erasure of one address in one tenant (SPEC §14; docs/architecture.md § "Personal data and
 * erasure"). One transaction:
 *
 * - deletes the recipient's data keys (every month): the event log's sealed copies of its
 *   address and subjects cannot be opened any more, so `npm run rebuild` brings them back as null;
 * - records the keyed hash in `erased_recipients` (the audit record of the erasure and the
 *   suppression a later send meets; no clear address is kept);
 * - scrubs every read model holding the address or what was sent to it: the contact (and its
 *   audience memberships), the log entries (`to_email`, `subject`, the fold state), the timeline's
 *   `email.queued` data, the content of sends (`outgoing_emails.message`), sandbox messages,
 *   webhook delivery records (body, recipient, the stored event), the clear suppression entry,
 *   and re-keys campaign unsubscribe records to the keyed hash (their count stays); dead letters
 *   naming the address in this tenant lose their payload.
 *
 * Counters (`email_log_counts`) and ClickHouse rollups hold no personal field: they are left
 * alone, so counts and analytics stay as they were.
 */
export async function eraseRecipient(
  pool: pg.Pool,
  keyring: Keyring,
  tenantId: string,
  email: string,
): Promise<ErasureResult & { firstTime: boolean }> {
  const address = email.trim().toLowerCase();
  const rh = keyring.recipientHash(tenantId, address);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const dataKeys = await client.query(
      'DELETE FROM data_keys WHERE tenant_id = $1 AND recipient_hash = $2',
      [tenantId, rh],
    );
    const first = await client.query(
      `INSERT INTO erased_recipients (tenant_id, recipient_hash) VALUES ($1, $2)
       ON CONFLICT DO NOTHING RETURNING 1`,
      [tenantId, rh],
    );
    const contacts = await client.query('DELETE FROM contacts WHERE tenant_id = $1 AND email = $2', [
      tenantId,
      address,
    ]);
    // The emails of this recipient: by their log entry, and by the send's content (a send not yet
    // projected has no log entry). A recipient may be written `Name <address>`.
    const { rows: emailRows } = await client.query<{ id: string }>(
      `SELECT id FROM email_logs WHERE tenant_id = $1 AND lower(to_email) = $2
       UNION
       SELECT id FROM outgoing_emails
        WHERE tenant_id = $1
          AND (lower(message->>'to') = $2 OR lower(message->>'to') LIKE '%<' || $2 || '>')`,
      [tenantId, address],
    );
    const ids = emailRows.map((r) => r.id);
    const emails = await client.query(
      `UPDATE email_logs
          SET to_email = NULL, subject = NULL, version = version + 1,
              state = CASE WHEN jsonb_typeof(state->'queued') = 'object'
                           THEN jsonb_set(state, '{queued}', (state->'queued') || '{"toEmail": null, "subject": null}')
                           ELSE state END
        WHERE tenant_id = $1 AND id = ANY($2::text[])
          AND (to_email IS NOT NULL OR subject IS NOT NULL
               OR state->'queued'->'toEmail' <> 'null'::jsonb OR state->'queued'->'subject' <> 'null'::jsonb)`,
      [tenantId, ids],
    );
    await client.query(
      `UPDATE email_events SET data = data || '{"toEmail": null, "subject": null}'
        WHERE tenant_id = $1 AND email_id = ANY($2::text[]) AND type = 'email.queued'`,
      [tenantId, ids],
    );
    // The content of the send: what the sender would hand to a provider. A send still due finds
    // `erased` and ends as suppressed (services/sender).
    await client.query(
      `UPDATE outgoing_emails
          SET message = jsonb_build_object('erased', true, 'from', message->'from'), updated_at = now()
        WHERE tenant_id = $1 AND id = ANY($2::text[]) AND NOT (message ? 'erased')`,
      [tenantId, ids],
    );
    const sandboxMessages = await client.query(
      'DELETE FROM sandbox_messages WHERE tenant_id = $1 AND email_id = ANY($2::text[])',
      [tenantId, ids],
    );
    const webhookDeliveries = await client.query(
      `UPDATE webhook_deliveries
          SET request_body = NULL, recipient = NULL,
              event = CASE WHEN event->>'type' = 'email.queued' AND jsonb_typeof(event->'data') = 'object'
                           THEN jsonb_set(event, '{data}', (event->'data') || '{"toEmail": null, "subject": null}')
                           ELSE event END
        WHERE tenant_id = $1 AND (lower(recipient) = $2 OR email_id = ANY($3::text[]))
          AND (request_body IS NOT NULL OR recipient IS NOT NULL
               OR coalesce(event->'data'->'toEmail', 'null'::jsonb) <> 'null'::jsonb)`,
      [tenantId, address, ids],
    );
    // The soft bounces counted toward the soft-bounce rule name the address (SPEC §21).
    await client.query('DELETE FROM soft_bounces WHERE tenant_id = $1 AND email = $2', [tenantId, address]);
    const suppressions = await client.query('DELETE FROM suppressions WHERE tenant_id = $1 AND email = $2', [
      tenantId,
      address,
    ]);
    const unsubscribes = await client.query(
      `UPDATE unsubscribe_sources SET email_hash = $3 WHERE tenant_id = $1 AND email_hash = $2`,
      [tenantId, createHash('sha256').update(address).digest('hex'), `erased:${rh}`],
    );
    // A record the projector refused keeps its raw (opened) value: scrubbed when it names the
    // address in this tenant (dead letters have no tenant column; the JSON names it).
    await client.query(
      `UPDATE dead_letters SET payload = '[erased: the record named an erased recipient]'
        WHERE strpos(lower(payload), $2) > 0 AND strpos(payload, $1) > 0`,
      [JSON.stringify({ tenantId }).slice(1, -1), address],
    );
    // The api processes' memoised log pages of this tenant may hold the address (delivered at commit).
    await notifyReadModel(client, { kind: 'logs', tenants: [tenantId] });
    await client.query('COMMIT');
    keyring.invalidate(tenantId, rh);
    return {
      erased: true,
      firstTime: (first.rowCount ?? 0) > 0,
      counts: {
        dataKeys: dataKeys.rowCount ?? 0,
        contacts: contacts.rowCount ?? 0,
        emails: emails.rowCount ?? 0,
        sandboxMessages: sandboxMessages.rowCount ?? 0,
        webhookDeliveries: webhookDeliveries.rowCount ?? 0,
        suppressions: suppressions.rowCount ?? 0,
        unsubscribes: unsubscribes.rowCount ?? 0,
      },
    };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
