import type pg from 'pg';

export interface EmailRef {
  tenantId: string;
  emailId: string;
}

/**
 * The emails each message id names (`provider_messages`, written by the projector from
 * `email.sent`; SPEC §21). One query for every id of a request. An id of no email is absent; an id
 * several tenants' emails share (the same Message-ID) maps to all of them, and the routes apply
 * nothing to it.
 */
export async function emailsByMessageId(
  pool: pg.Pool,
  messageIds: readonly string[],
): Promise<Map<string, EmailRef[]>> {
  const out = new Map<string, EmailRef[]>();
  if (messageIds.length === 0) return out;
  const { rows } = await pool.query<{ message_id: string; tenant_id: string; email_id: string }>(
    'SELECT message_id, tenant_id, email_id FROM provider_messages WHERE message_id = ANY($1::text[])',
    [[...new Set(messageIds)]],
  );
  for (const row of rows) {
    const list = out.get(row.message_id) ?? [];
    list.push({ tenantId: row.tenant_id, emailId: row.email_id });
    out.set(row.message_id, list);
  }
  return out;
}
