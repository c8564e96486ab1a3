import { hasRecipients, withoutCopies, withoutMentions } from '@tern/privacy';
import type pg from 'pg';
import { deleteAttachments } from './attachments.js';

/**
 * What retention and erasure (SPEC §9, §14) do to the sending side's tables, which hold the
 * content of each send: `outgoing_emails` (the send and its state) and `sandbox_messages` (what
 * the sandbox provider kept). Each is deleted with its email's log row (`EmailContentTable` of
 * packages/read-models), scrubbed of an erased recipient, and rid of the recipient as another
 * mail's cc, bcc or reply-to.
 */

/**
 * Why a deleted send cannot be pending: `outgoing_emails` goes awaiting_log → pending ⇄ sending →
 * done, or awaiting_log|pending → cancelling → cancelled. `done` and `cancelled` are final: every
 * write of the sender and of cancel names the state it leaves, never these two, so a row a
 * statement reads as final stays final, and nothing claims or reads it again for sending.
 */
export const OUTGOING_CONTENT = {
  table: 'outgoing_emails',
  id: 'id',
  at: 'created_at',
  only: "x.state IN ('done', 'cancelled')",
} as const;

/** A sandbox message is read again only by a retry of its send (`delayed@`), which is not final. */
export const SANDBOX_CONTENT = {
  table: 'sandbox_messages',
  id: 'email_id',
  at: 'created_at',
  only: null,
} as const;

/** Attachment bytes (SPEC §22), sealed; kept while the send is not final (the sweep checks it). */
export const ATTACHMENT_CONTENT = {
  table: 'email_attachments',
  id: 'email_id',
  at: 'created_at',
  only: null,
} as const;

/**
 * SQL: true for an email (`<alias>.tenant_id`, `<alias>.<id>`) whose send the sender is not done
 * with: a probe of the primary key and the row's state (migration 0520 dropped the index of
 * unfinished rows, written at every step of a send for this probe alone).
 */
export const sendNotFinalSql = (alias: string, id: string): string =>
  `EXISTS (SELECT 1 FROM outgoing_emails o WHERE o.tenant_id = ${alias}.tenant_id AND o.id = ${alias}.${id}
              AND o.state NOT IN ('done', 'cancelled'))`;

/** The tenant's sends to this address (lowercased) as their (first) `to`, by content: a recipient may be written `Name <address>`. */
export async function sendIdsTo(client: pg.ClientBase, tenantId: string, address: string): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `SELECT id FROM outgoing_emails
      WHERE tenant_id = $1
        AND (lower(message->>'to') = $2 OR lower(message->>'to') LIKE '%<' || $2 || '>'
             OR lower(message->'to'->>0) = $2 OR lower(message->'to'->>0) LIKE '%<' || $2 || '>')`,
    [tenantId, address],
  );
  return rows.map((r) => r.id);
}

/**
 * Scrubs the sends and sandbox copies of an erased recipient, in the erasure's transaction (SPEC
 * §14, §22: per address). First the address leaves every message of the tenant naming it (to, cc,
 * bcc, reply-to): a message to several people stays theirs; one left with no recipient loses its
 * content. Then a send of the recipient (`emailIds`, where it is the first `to`) still naming the
 * address (its text quotes it) is erased whole: a send still due finds `erased` and ends as
 * suppressed (services/sender); its sandbox copy and its attachments (sealed under the erased
 * key) go. Answers the sandbox messages deleted and the other emails whose messages named it.
 */
export async function eraseSendContent(
  client: pg.ClientBase,
  tenantId: string,
  address: string,
  emailIds: readonly string[],
): Promise<{ sandboxMessages: number; mentioned: string[] }> {
  const copies = await scrubCopies(client, tenantId, address);
  await client.query(
    `UPDATE outgoing_emails
        SET message = jsonb_build_object('erased', true, 'from', message->'from'), last_error = NULL,
            updated_at = now()
      WHERE tenant_id = $1 AND id = ANY($2::text[]) AND NOT (message ? 'erased')
        AND strpos(lower(message::text), $3) > 0`,
    [tenantId, emailIds, address],
  );
  // A relay's answer may quote the address.
  await client.query(
    `UPDATE outgoing_emails SET last_error = NULL
      WHERE tenant_id = $1 AND id = ANY($2::text[]) AND last_error IS NOT NULL`,
    [tenantId, [...emailIds, ...copies.mentioned]],
  );
  const sandbox = await client.query(
    `DELETE FROM sandbox_messages WHERE tenant_id = $1 AND email_id = ANY($2::text[])
        AND strpos(lower(message::text), $3) > 0`,
    [tenantId, emailIds, address],
  );
  // The attachments' bytes (SPEC §22): sealed under the keys the erasure deletes, and deleted too.
  await deleteAttachments(client, tenantId, emailIds);
  const mentioned = copies.mentioned.filter((id) => !emailIds.includes(id));
  return { sandboxMessages: copies.sandboxDeleted + (sandbox.rowCount ?? 0), mentioned };
}

/**
 * The address out of every message of the tenant naming it (`outgoing_emails`, its content;
 * `sandbox_messages`, what the sandbox kept): the rows that mention it are read and each
 * rewritten without it, in its recipients and in any other text (`[erased]`). A message left with no recipient loses its content (`{ erased, from }`; a
 * sandbox copy is deleted). Returns the emails whose messages named it and the sandbox copies deleted.
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
      // Out of the recipient fields, then out of every other text (an attachment's file name, the
      // subject, a header: issue 40 item 10); the From stays (a send still due needs it).
      const stripped = withoutCopies(row.message, address);
      const mentions = withoutMentions(stripped ?? row.message, address);
      const message = mentions ? { ...mentions, from: row.message.from } : stripped;
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
