import { withoutCopies } from '@tern/privacy';
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

/** SQL: true for an email (`<alias>.tenant_id`, `<alias>.<id>`) whose send the sender is not done with. */
export const sendNotFinalSql = (alias: string, id: string): string =>
  `EXISTS (SELECT 1 FROM outgoing_emails o WHERE o.tenant_id = ${alias}.tenant_id AND o.id = ${alias}.${id}
              AND o.state NOT IN ('done', 'cancelled'))`;

/** The tenant's sends to this address (lowercased), by content: a recipient may be written `Name <address>`. */
export async function sendIdsTo(client: pg.ClientBase, tenantId: string, address: string): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `SELECT id FROM outgoing_emails
      WHERE tenant_id = $1
        AND (lower(message->>'to') = $2 OR lower(message->>'to') LIKE '%<' || $2 || '>')`,
    [tenantId, address],
  );
  return rows.map((r) => r.id);
}

/**
 * Scrubs the sends and sandbox copies of an erased recipient (`emailIds`), in the erasure's
 * transaction: the content of a send is what the sender would hand to a provider, so a send still
 * due finds `erased` and ends as suppressed (services/sender); sandbox copies go. Then the address
 * is taken out of the cc, bcc and reply-to of the tenant's other mail. Answers the sandbox
 * messages deleted.
 */
export async function eraseSendContent(
  client: pg.ClientBase,
  tenantId: string,
  address: string,
  emailIds: readonly string[],
): Promise<{ sandboxMessages: number }> {
  await scrubCopies(client, tenantId, address, emailIds);
  await client.query(
    `UPDATE outgoing_emails
        SET message = jsonb_build_object('erased', true, 'from', message->'from'), last_error = NULL,
            updated_at = now()
      WHERE tenant_id = $1 AND id = ANY($2::text[]) AND (NOT (message ? 'erased') OR last_error IS NOT NULL)`,
    [tenantId, emailIds],
  );
  const sandbox = await client.query(
    'DELETE FROM sandbox_messages WHERE tenant_id = $1 AND email_id = ANY($2::text[])',
    [tenantId, emailIds],
  );
  // The attachments' bytes (SPEC §22): sealed under the keys the erasure deletes, and deleted too.
  await deleteAttachments(client, tenantId, emailIds);
  return { sandboxMessages: sandbox.rowCount ?? 0 };
}

/**
 * The address out of the cc, bcc and reply-to of the tenant's other mail (`outgoing_emails`, its
 * content; `sandbox_messages`, what the sandbox kept): the rows that mention it are read and each
 * rewritten without it.
 */
async function scrubCopies(client: pg.ClientBase, tenantId: string, address: string, own: readonly string[]) {
  for (const table of ['outgoing_emails', 'sandbox_messages'] as const) {
    const id = table === 'outgoing_emails' ? 'id' : 'email_id';
    const { rows } = await client.query<{ id: string; message: Record<string, unknown> }>(
      `SELECT ${id} AS id, message FROM ${table}
        WHERE tenant_id = $1 AND NOT (${id} = ANY($3::text[])) AND strpos(lower(message::text), $2) > 0
        FOR UPDATE`,
      [tenantId, address, own],
    );
    for (const row of rows) {
      const message = withoutCopies(row.message, address);
      if (message)
        await client.query(`UPDATE ${table} SET message = $3 WHERE tenant_id = $1 AND ${id} = $2`, [
          tenantId,
          row.id,
          message,
        ]);
    }
  }
}
