import { createHash } from 'node:crypto';
import { type Attachment, type AttachmentMeta, contentTypeOf } from '@tern/contracts';
import type { Keyring } from '@tern/privacy';
import type pg from 'pg';

/**
 * Attachment bytes (SPEC §22): decoded once from the request, sealed under the email's key into
 * `email_attachments` (migration 0130) before email.queued is appended, opened by the sender when
 * it composes the message. The send's content (`outgoing_emails.message`) keeps only their
 * description (`AttachmentMeta`); the event log keeps none of it.
 */

export type AttachmentKeyring = Pick<Keyring, 'sealBytes' | 'openBytes'>;

/** An attachment with its bytes, as stored and as the provider gets it. */
export interface AttachmentFile {
  filename: string;
  contentType: string;
  contentId: string | null;
  content: Buffer;
}

/** The request's attachments decoded (the schema checked the base64), with their descriptions. */
export function decodeAttachments(list: readonly Attachment[]): {
  files: AttachmentFile[];
  meta: AttachmentMeta[];
} {
  const files = list.map((a) => ({
    filename: a.filename,
    contentType: a.contentType ?? contentTypeOf(a.filename),
    contentId: a.contentId ?? null,
    content: Buffer.from(a.content, 'base64'),
  }));
  return { files, meta: files.map(describe) };
}

export function describe(file: AttachmentFile): AttachmentMeta {
  return {
    filename: file.filename,
    contentType: file.contentType,
    contentId: file.contentId,
    size: file.content.length,
    sha256: createHash('sha256').update(file.content).digest('hex'),
  };
}

/**
 * Seals and writes the files of one email, under the key of its recipient (the first `to`) and the
 * month of `at` — the key its email.queued is sealed under. A row already there is left alone
 * (a retried send writes nothing twice).
 */
export async function storeAttachments(
  pool: Pick<pg.Pool, 'query'>,
  keyring: AttachmentKeyring,
  email: { tenantId: string; emailId: string; recipient: string; at: Date },
  files: readonly AttachmentFile[],
): Promise<void> {
  for (const [position, file] of files.entries()) {
    const sealed = await keyring.sealBytes(
      email.tenantId,
      email.emailId,
      email.recipient,
      email.at,
      String(position),
      file.content,
    );
    await pool.query(
      `INSERT INTO email_attachments (tenant_id, email_id, position, recipient_hash, period, iv, tag, content, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (tenant_id, email_id, position) DO NOTHING`,
      [
        email.tenantId,
        email.emailId,
        position,
        sealed.rh,
        sealed.p,
        sealed.iv,
        sealed.tag,
        sealed.ct,
        email.at,
      ],
    );
  }
}

/**
 * The files of one email, opened, in order, checked against their descriptions (size, sha256);
 * `{ error }` when one is missing or cannot be opened (erased, past retention, altered): the
 * message is then never sent without it.
 */
export async function loadAttachments(
  pool: Pick<pg.Pool, 'query'>,
  keyring: AttachmentKeyring,
  tenantId: string,
  emailId: string,
  meta: readonly AttachmentMeta[],
): Promise<AttachmentFile[] | { error: string }> {
  if (meta.length === 0) return [];
  const { rows } = await pool.query<{
    position: number;
    recipient_hash: string;
    period: string;
    iv: Buffer;
    tag: Buffer;
    content: Buffer;
  }>(
    `SELECT position, recipient_hash, period, iv, tag, content FROM email_attachments
      WHERE tenant_id = $1 AND email_id = $2 ORDER BY position`,
    [tenantId, emailId],
  );
  const files: AttachmentFile[] = [];
  for (const [position, m] of meta.entries()) {
    const row = rows.find((r) => r.position === position);
    const bytes =
      row &&
      (await keyring.openBytes(tenantId, emailId, String(position), {
        rh: row.recipient_hash,
        p: row.period,
        iv: row.iv,
        tag: row.tag,
        ct: row.content,
      }));
    if (!bytes) return { error: `attachment ${position} is no longer stored (erased or expired)` };
    const file = { filename: m.filename, contentType: m.contentType, contentId: m.contentId, content: bytes };
    if (describe(file).sha256 !== m.sha256)
      return { error: `attachment ${position} does not match its checksum` };
    files.push(file);
  }
  return files;
}

/** Deletes the attachments of these emails (a send the log refused, an erasure). */
export async function deleteAttachments(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  emailIds: readonly string[],
): Promise<number> {
  if (emailIds.length === 0) return 0;
  const result = await db.query(
    'DELETE FROM email_attachments WHERE tenant_id = $1 AND email_id = ANY($2::text[])',
    [tenantId, emailIds],
  );
  return result.rowCount ?? 0;
}
