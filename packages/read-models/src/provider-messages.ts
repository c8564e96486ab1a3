import type { DeliveryEvent } from '@tern/contracts';
import { normalizeMessageId } from '@tern/domain';
import type pg from 'pg';
import type { PgReadModel } from './read-model.js';

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
  pool: pg.Pool | pg.ClientBase,
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

/** The (message id, email) pairs of a batch's `email.sent` events: the Message-ID and the relay's id. */
export function providerMessageIds(
  events: readonly DeliveryEvent[],
): { messageId: string; tenantId: string; emailId: string; sentAt: string }[] {
  const out: { messageId: string; tenantId: string; emailId: string; sentAt: string }[] = [];
  for (const e of events) {
    if (e.type !== 'email.sent') continue;
    for (const raw of [e.data.messageId, e.data.providerMessageId]) {
      const messageId = raw === undefined ? '' : normalizeMessageId(raw);
      if (messageId !== '')
        out.push({ messageId, tenantId: e.tenantId, emailId: e.emailId, sentAt: e.occurredAt });
    }
  }
  return out;
}

/**
 * The ids a provider's notification names an email by (SPEC §21), from every freshly applied
 * `email.sent`; deleted with their email by retention.
 */
export const providerMessages: PgReadModel = {
  name: 'provider messages',
  store: 'postgres',
  rebuild: 'truncate',
  tables: ['provider_messages'],
  emailContent: [{ table: 'provider_messages', id: 'email_id', at: 'sent_at', only: null }],
  async apply(client, { applied }) {
    const sentIds = providerMessageIds(applied);
    if (sentIds.length === 0) return;
    await client.query(
      `INSERT INTO provider_messages (message_id, tenant_id, email_id, sent_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
       ON CONFLICT DO NOTHING`,
      [
        sentIds.map((x) => x.messageId),
        sentIds.map((x) => x.tenantId),
        sentIds.map((x) => x.emailId),
        sentIds.map((x) => x.sentAt),
      ],
    );
  },
};
