import { type AttachmentMeta, type NormalizedSendEmailBody, recipientsOf } from '@tern/contracts';
import { queuedEvent } from '@tern/domain';
import type { DeliveryEventAppender } from '@tern/event-log';
import { createCoalescer } from '@tern/kernel';
import type pg from 'pg';
import {
  type AttachmentFile,
  type AttachmentKeyring,
  deleteAttachments,
  storeAttachments,
} from './attachments.js';

/** The content of `outgoing_emails.message`: the send body minus scheduling fields. */
export type StoredMessage = Omit<NormalizedSendEmailBody, 'scheduledAt' | 'projectId' | 'attachments'> & {
  /** Set by an erasure of the recipient (SPEC §14): the content is gone, the email is never sent. */
  erased?: true;
  /** What the attachments are (SPEC §22); their bytes are in `email_attachments`, sealed. */
  attachments?: AttachmentMeta[];
  /**
   * Campaign and sequence mail (SPEC §15): the source its `List-Unsubscribe` headers name
   * (`campaign:<id>`, `sequence:<id>:<step>`). The sender adds them for the one address in `to`
   * (`listUnsubscribeHeaders`: the token is a function of TRACKING_SECRET, the tenant, the address
   * and this source, so every attempt sends the same bytes). Stored instead of the headers: ≈ 430
   * bytes fewer in each version of the row (issue 45 item 2).
   */
  unsubscribe?: string;
};

/** One email to send, from `POST /emails/send|batch`, a campaign or a sequence step. */
export interface NewSend {
  id: string;
  /** The content of the send (`outgoing_emails.message`): the one place that holds it. */
  message: StoredMessage;
  /** The subject as the recipient will read it (rendered), for the log entry. */
  subject: string;
  /** The template the content comes from, for analytics (the message may already be rendered). */
  templateId: string | null;
  dueAt: Date;
  scheduledAt: Date | null;
  projectId: string | null;
  /** The campaign of campaign mail (SPEC §26): its `email.queued` names it for analytics. */
  campaignId?: string | null;
  /**
   * Campaign or sequence mail (SPEC §23): claimed after every tenant's transactional mail that is
   * due. Default false (POST /emails/send|batch, SMTP submission).
   */
  bulk?: boolean;
  /** The attachments' bytes (described in `message.attachments`); sealed into `email_attachments`. */
  files?: readonly AttachmentFile[];
}

/** The recipient whose key seals the email (its first `to`), as its email.queued names it. */
const recipientOf = (to: string | readonly string[]): string => (typeof to === 'string' ? to : (to[0] ?? ''));

/**
 * The one send path (SPEC §11, §15): the content goes to `outgoing_emails` first (state
 * `awaiting_log`: not claimable), then `email.queued` is appended; the sender consumes it, marks
 * the row due, sends and appends the outcome. Idempotent per email id: a row that exists is left
 * alone, and a re-appended `email.queued` (same event id) is a duplicate for the projector and
 * moves nothing for the sender (it only moves rows still `awaiting_log`). When the log refuses
 * the append, the rows this call wrote are deleted (nothing was accepted) and the error is thrown.
 */
export async function enqueueSends(
  pool: Pick<pg.Pool, 'query'>,
  stream: DeliveryEventAppender,
  tenantId: string,
  sends: readonly NewSend[],
  at: Date,
  /** Seals attachment bytes; required when a send has `files`. */
  keyring?: AttachmentKeyring,
): Promise<void> {
  if (sends.length === 0) return;
  if (!keyring && sends.some((s) => (s.files?.length ?? 0) > 0))
    throw new Error('enqueueSends: a send with attachments needs the keyring');
  // Built first: an event the contract refuses throws before any row is written.
  const events = sends.map((s) =>
    queuedEvent({
      tenantId,
      emailId: s.id,
      at,
      // Several recipients: the log entry names the first `to` (SPEC §22).
      toEmail: recipientsOf(s.message.to)[0] ?? '',
      subject: s.subject,
      from: s.message.from,
      templateId: s.templateId,
      tags: s.message.tags,
      scheduledAt: s.scheduledAt,
      projectId: s.projectId,
      campaignId: s.campaignId ?? null,
    }),
  );
  const written = await insertSends(pool, tenantId, sends, at);
  try {
    // The bytes of the rows this call wrote (a row already there has its own), before the log
    // names the email: the sender never meets an email.queued whose attachments are missing.
    const fresh = new Set(written);
    for (const s of sends) {
      if (!fresh.has(s.id) || !s.files || s.files.length === 0) continue;
      await storeAttachments(
        pool,
        keyring!,
        { tenantId, emailId: s.id, recipient: recipientOf(s.message.to), at },
        s.files,
      );
    }
    await stream.append(events);
  } catch (error) {
    if (written.length > 0) {
      await deleteAttachments(pool, tenantId, written).catch(() => undefined);
      await pool
        .query(
          `DELETE FROM outgoing_emails WHERE tenant_id = $1 AND id = ANY($2::text[]) AND state = 'awaiting_log'`,
          [tenantId, written],
        )
        .catch(() => undefined);
    }
    throw error;
  }
}

/** One caller's rows for the grouped insert; `written` is filled in by the batch that carried it. */
interface InsertItem {
  tenantId: string;
  sends: readonly NewSend[];
  at: Date;
  written: string[];
}

const INSERT_SENDS = `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message, scheduled_at, project_id, bulk, created_at, updated_at)
     SELECT t, i, 'awaiting_log', d, m, s, p, b, a, a
       FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::jsonb[], $5::timestamptz[], $6::text[],
                   $7::boolean[], $8::timestamptz[])
            AS u(t, i, d, m, s, p, b, a)
     ON CONFLICT (tenant_id, id) DO NOTHING
     RETURNING tenant_id, id`;

/**
 * Writes the items' rows in one statement and hands each item the ids it wrote. An id that two
 * items of the batch both carry goes to the first (the second meets it as a row already there,
 * as it would have one statement later).
 */
async function insertGroup(pool: Pick<pg.Pool, 'query'>, items: readonly InsertItem[]): Promise<void> {
  const rows = items.flatMap((item) => item.sends.map((send) => ({ item, send })));
  const { rows: inserted } = await pool.query<{ tenant_id: string; id: string }>(INSERT_SENDS, [
    rows.map((r) => r.item.tenantId),
    rows.map((r) => r.send.id),
    rows.map((r) => r.send.dueAt),
    rows.map((r) => JSON.stringify(r.send.message)),
    rows.map((r) => r.send.scheduledAt),
    rows.map((r) => r.send.projectId),
    rows.map((r) => r.send.bulk === true),
    rows.map((r) => r.item.at),
  ]);
  const fresh = new Set(inserted.map((r) => `${r.tenant_id}\u0000${r.id}`));
  for (const item of items) item.written = [];
  for (const { item, send } of rows) {
    const key = `${item.tenantId}\u0000${send.id}`;
    if (fresh.delete(key)) item.written.push(send.id);
  }
}

/**
 * Group commit of the send rows (issue 45 item 2): the `outgoing_emails` rows of calls made on
 * the same pool while a previous insert runs go in one statement (`createCoalescer`: nothing
 * waits on a timer). A batch that fails is retried item by item, so one caller's bad row fails
 * that caller alone. A group holds up to `GROUP_ROWS` rows (a call with more goes alone).
 */
const GROUP_ROWS = 2000;
const inserters = new WeakMap<object, (item: InsertItem) => Promise<void>>();

async function insertSends(
  pool: Pick<pg.Pool, 'query'>,
  tenantId: string,
  sends: readonly NewSend[],
  at: Date,
): Promise<string[]> {
  let insert = inserters.get(pool);
  if (insert === undefined) {
    insert = createCoalescer<InsertItem>((items) => insertGroup(pool, items), GROUP_ROWS, {
      weight: (item) => item.sends.length,
      retryAlone: true,
    });
    inserters.set(pool, insert);
  }
  const item: InsertItem = { tenantId, sends, at, written: [] };
  await insert(item);
  return item.written;
}

/**
 * The send rows whose id is `emailId` in any letter case (a relay may fold the case of a VERP
 * address), across tenants: the bounce mailbox tells them apart by the address's MAC (SPEC §21).
 */
export async function sendsByIdAnyCase(
  pool: Pick<pg.Pool, 'query'>,
  emailId: string,
): Promise<{ tenant_id: string; id: string; message: Record<string, unknown> }[]> {
  const { rows } = await pool.query<{ tenant_id: string; id: string; message: Record<string, unknown> }>(
    'SELECT tenant_id, id, message FROM outgoing_emails WHERE lower(id) = lower($1) LIMIT 10',
    [emailId],
  );
  return rows;
}
