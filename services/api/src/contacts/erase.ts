import { createHash } from 'node:crypto';
import {
  ERASED_TEXT,
  type ErasureResult,
  EVENT_TYPES,
  erasedValueOf,
  PERSONAL_FIELDS,
  recipientsOf,
} from '@tern/contracts';
import { withTransaction } from '@tern/jobs';
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
 * Every event's personal fields (`PERSONAL_FIELDS` of `@tern/contracts`: a bounce's diagnostic, a
 * clicked URL…) are scrubbed from the timeline and from webhook delivery records, which also lose
 * the endpoint's answers; the address is taken out of the cc, bcc and reply-to of other people's
 * mail (content and sandbox copies); the email → key map (`email_keys`) rows go with the keys.
 * After the commit `data_keys` is rewritten into a new file: the deleted wrapped keys stay in no
 * data file of the table (docs/architecture.md § "What WAL and backups keep").
 *
 * Counters (`email_log_counts`) and ClickHouse rollups hold no personal field: they are left
 * alone, so counts and analytics stay as they were.
 */
export async function eraseRecipient(
  pool: pg.Pool,
  keyring: Keyring,
  tenantId: string,
  email: string,
  opts: { rewriteKeys?: boolean; log?: (error: unknown) => void } = {},
): Promise<ErasureResult & { firstTime: boolean }> {
  const address = email.trim().toLowerCase();
  const rh = keyring.recipientHash(tenantId, address);
  const done = await withTransaction(pool, async (client) => {
    const dataKeys = await client.query(
      'DELETE FROM data_keys WHERE tenant_id = $1 AND recipient_hash = $2',
      [tenantId, rh],
    );
    await client.query('DELETE FROM email_keys WHERE tenant_id = $1 AND recipient_hash = $2', [tenantId, rh]);
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
    // projected has no log entry), where it is the (first) `to`. A recipient may be written
    // `Name <address>`.
    const { rows: emailRows } = await client.query<{ id: string }>(
      `SELECT id FROM email_logs WHERE tenant_id = $1 AND lower(to_email) = $2
       UNION
       SELECT id FROM outgoing_emails
        WHERE tenant_id = $1
          AND (lower(message->>'to') = $2 OR lower(message->>'to') LIKE '%<' || $2 || '>'
               OR lower(message->'to'->>0) = $2 OR lower(message->'to'->>0) LIKE '%<' || $2 || '>')`,
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
    // The address out of every message naming it (to, cc, bcc, reply-to; SPEC §22: per address):
    // a message to several people stays theirs; one left with no recipient loses its content.
    const copies = await scrubCopies(client, tenantId, address);
    // Every event's personal fields, as listed next to the event contracts: of this recipient's
    // emails, the events of the whole message and those naming it (another recipient's own
    // outcomes are sealed under that recipient's key and stay); of the other emails naming it, the
    // events naming it.
    await client.query(
      `UPDATE email_events SET data = ${scrubbedData('data', 'type', '$3')}
        WHERE tenant_id = $1
          AND ((email_id = ANY($2::text[]) AND (NOT (data ? 'recipient') OR lower(data->>'recipient') = $4))
               OR (email_id = ANY($5::text[]) AND lower(data->>'recipient') = $4))
          AND data IS DISTINCT FROM ${scrubbedData('data', 'type', '$3')}`,
      [tenantId, ids, SCRUB_SPEC, address, copies.mentioned],
    );
    // The content of the send: what the sender would hand to a provider. One still naming the
    // address after the scrub (its text quotes it) is erased whole; a send still due then finds
    // `erased` and ends as suppressed (services/sender). A relay's answer may quote the address.
    await client.query(
      `UPDATE outgoing_emails
          SET message = jsonb_build_object('erased', true, 'from', message->'from'), last_error = NULL,
              updated_at = now()
        WHERE tenant_id = $1 AND id = ANY($2::text[]) AND NOT (message ? 'erased')
          AND strpos(lower(message::text), $3) > 0`,
      [tenantId, ids, address],
    );
    await client.query(
      `UPDATE outgoing_emails SET last_error = NULL
        WHERE tenant_id = $1 AND id = ANY($2::text[]) AND last_error IS NOT NULL`,
      [tenantId, [...ids, ...copies.mentioned]],
    );
    const sandboxMessages = await client.query(
      `DELETE FROM sandbox_messages WHERE tenant_id = $1 AND email_id = ANY($2::text[])
          AND strpos(lower(message::text), $3) > 0`,
      [tenantId, ids, address],
    );
    // What the endpoints answered may echo the body they were sent.
    await client.query(
      `UPDATE webhook_attempts SET response_excerpt = NULL
        WHERE response_excerpt IS NOT NULL AND delivery_id IN (
          SELECT id FROM webhook_deliveries
           WHERE tenant_id = $1 AND (lower(recipient) = $2 OR email_id = ANY($3::text[])
                 OR (email_id = ANY($4::text[]) AND lower(event->'data'->>'recipient') = $2)))`,
      [tenantId, address, ids, copies.mentioned],
    );
    const eventScrubbed = `CASE WHEN jsonb_typeof(event->'data') = 'object'
                                THEN jsonb_set(event, '{data}', ${scrubbedData("event->'data'", "event->>'type'", '$4')})
                                ELSE event END`;
    const webhookDeliveries = await client.query(
      `UPDATE webhook_deliveries
          SET request_body = NULL, recipient = NULL, event = ${eventScrubbed}
        WHERE tenant_id = $1 AND (lower(recipient) = $2 OR email_id = ANY($3::text[])
              OR (email_id = ANY($5::text[]) AND lower(event->'data'->>'recipient') = $2))
          AND (request_body IS NOT NULL OR recipient IS NOT NULL OR event IS DISTINCT FROM ${eventScrubbed})`,
      [tenantId, address, ids, SCRUB_SPEC, copies.mentioned],
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
    return {
      firstTime: (first.rowCount ?? 0) > 0,
      counts: {
        dataKeys: dataKeys.rowCount ?? 0,
        contacts: contacts.rowCount ?? 0,
        emails: emails.rowCount ?? 0,
        sandboxMessages: (sandboxMessages.rowCount ?? 0) + copies.sandboxDeleted,
        webhookDeliveries: webhookDeliveries.rowCount ?? 0,
        suppressions: suppressions.rowCount ?? 0,
        unsubscribes: unsubscribes.rowCount ?? 0,
      },
    };
  });
  keyring.invalidate(tenantId, rh);
  if (done.counts.dataKeys > 0 || opts.rewriteKeys) await rewriteDataKeys(pool, opts.log);
  return { erased: true, ...done };
}

/**
 * Per event type, the personal fields an erasure removes and what it writes in their place
 * (`PERSONAL_FIELDS`): null for email.queued's recipient and subject, `[erased]` for a required
 * field of another type (the timeline stays valid), nothing for an optional one.
 */
const SCRUB_SPEC: Record<string, { remove: string[]; set: Record<string, string | null> }> =
  Object.fromEntries(
    EVENT_TYPES.filter((type) => PERSONAL_FIELDS[type].length > 0).map((type) => {
      const names: readonly string[] = PERSONAL_FIELDS[type];
      const set: Record<string, string | null> = {};
      for (const name of names) {
        const v = erasedValueOf(type, name);
        if (v !== undefined) set[name] = v;
      }
      return [type, { remove: [...names], set }];
    }),
  );

/** SQL: the jsonb `data` (of event type `type`) without its personal fields, per the spec in parameter `spec`. */
const scrubbedData = (data: string, type: string, spec: string) =>
  `CASE WHEN ${spec}::jsonb ? (${type})
        THEN ((${data}) - ARRAY(SELECT jsonb_array_elements_text(${spec}::jsonb -> (${type}) -> 'remove')))
             || (${spec}::jsonb -> (${type}) -> 'set')
             -- An outcome that named one recipient still names one, erased (SPEC §22).
             || CASE WHEN (${data}) ? 'recipient' THEN '{"recipient": "${ERASED_TEXT}"}'::jsonb ELSE '{}'::jsonb END
        ELSE ${data} END`;

/** `entry` (an address, or `Name <address>`) is `address` (lowercased). */
function namesAddress(entry: unknown, address: string): boolean {
  if (typeof entry !== 'string') return false;
  const e = entry.trim().toLowerCase();
  return e === address || e.endsWith(`<${address}>`);
}

/**
 * A message (send content or sandbox copy) without the address in its to, cc, bcc and reply-to;
 * null when it has none there. `to` keeps its form (a string stays one while it names another).
 */
export function withoutCopies(
  message: Record<string, unknown>,
  address: string,
): Record<string, unknown> | null {
  let changed = false;
  const out = { ...message };
  for (const field of ['to', 'cc', 'bcc'] as const) {
    const value = message[field];
    if (typeof value !== 'string' && !Array.isArray(value)) continue;
    const list = recipientsOf(value);
    const kept = list.filter((entry) => !namesAddress(entry, address));
    if (kept.length !== list.length || (Array.isArray(value) && kept.length !== value.length)) {
      out[field] = typeof value === 'string' && kept.length === 1 ? kept[0] : kept;
      changed = true;
    }
  }
  if (namesAddress(message.replyTo, address)) {
    out.replyTo = null;
    changed = true;
  }
  return changed ? out : null;
}

/** Whether a message still has someone to go to. */
const hasRecipients = (m: Record<string, unknown>) =>
  recipientsOf(m.to).length + recipientsOf(m.cc).length + recipientsOf(m.bcc).length > 0;

/**
 * The address out of every message of the tenant naming it (`outgoing_emails`, its content;
 * `sandbox_messages`, what the sandbox kept): the rows that mention it are read and each
 * rewritten without it (SPEC §22: erasure is per address; the others keep their mail). A message
 * left with no recipient loses its content (`{ erased, from }`; a sandbox copy is deleted).
 * Returns the emails whose messages named it and how many sandbox copies were deleted.
 */
async function scrubCopies(
  client: pg.ClientBase,
  tenantId: string,
  address: string,
): Promise<{ mentioned: string[]; sandboxDeleted: number }> {
  const mentioned = new Set<string>();
  let sandboxDeleted = 0;
  for (const table of ['outgoing_emails', 'sandbox_messages'] as const) {
    const id = table === 'outgoing_emails' ? 'id' : 'email_id';
    const { rows } = await client.query<{ id: string; message: Record<string, unknown> }>(
      `SELECT ${id} AS id, message FROM ${table}
        WHERE tenant_id = $1 AND strpos(lower(message::text), $2) > 0
        FOR UPDATE`,
      [tenantId, address],
    );
    for (const row of rows) {
      const message = withoutCopies(row.message, address);
      if (!message) continue;
      mentioned.add(row.id);
      if (hasRecipients(message))
        await client.query(`UPDATE ${table} SET message = $3 WHERE tenant_id = $1 AND ${id} = $2`, [
          tenantId,
          row.id,
          message,
        ]);
      else if (table === 'sandbox_messages') {
        await client.query('DELETE FROM sandbox_messages WHERE tenant_id = $1 AND email_id = $2', [
          tenantId,
          row.id,
        ]);
        sandboxDeleted++;
      } else
        await client.query(
          `UPDATE outgoing_emails
              SET message = jsonb_build_object('erased', true, 'from', message->'from'), last_error = NULL,
                  updated_at = now()
            WHERE tenant_id = $1 AND id = $2`,
          [tenantId, row.id],
        );
    }
  }
  return { mentioned: [...mentioned], sandboxDeleted };
}

/**
 * Rewrites `data_keys` into a new file: a deleted row's bytes — the wrapped key — stay in the
 * table's data file until its page is reused, so the erased key would survive in the file
 * otherwise. VACUUM FULL is not enough: it copies a deleted row that an older snapshot of another
 * session may still see ("recently dead"). So, in one transaction holding the table's exclusive
 * lock: the live rows (read after the erasure committed) go to a temporary table, TRUNCATE gives
 * `data_keys` a new file (the old one is emptied at commit, unlinked at the next checkpoint), and
 * they are copied back. The table is small (one row per recipient and month); keyring statements
 * wait for the lock (at most `lock_timeout`, 10 s, here); a failure is logged and redone by the
 * rescrub. The WAL and backups keep the key longer: docs/architecture.md § "What WAL and backups
 * keep".
 */
async function rewriteDataKeys(pool: pg.Pool, log?: (error: unknown) => void): Promise<void> {
  try {
    await withTransaction(pool, async (client) => {
      await client.query("SET LOCAL lock_timeout = '10s'");
      await client.query('LOCK TABLE data_keys IN ACCESS EXCLUSIVE MODE');
      await client.query('CREATE TEMP TABLE data_keys_kept ON COMMIT DROP AS SELECT * FROM data_keys');
      await client.query('TRUNCATE data_keys');
      await client.query('INSERT INTO data_keys SELECT * FROM data_keys_kept');
    });
  } catch (error) {
    log?.(error);
  }
}
