import { createHash } from 'node:crypto';
import type { Recipient } from '@tern/bulk';
import { unstorableText } from '@tern/contracts';
import { cutSubject, renderTemplate, type TemplateContent } from '@tern/domain';
import { idTime, type Logger } from '@tern/kernel';
import { templateContent } from '@tern/templates';

export { cutSubject };

import type pg from 'pg';

/**
 * What campaigns and sequences share (SPEC §15): one message per contact, rendered with the
 * contact's fields, naming what its RFC 8058 unsubscribe headers unsubscribe from (the sender adds
 * them), under an email id derived from what
 * it is for — so a retried or restarted fan-out produces the same ids, and the log, the projection
 * and the send path drop the repeats.
 */

/** One email of a campaign or sequence step, ready for the send path. */
export interface BulkMail {
  id: string;
  to: string;
  from: string;
  subject: string;
  html: string | null;
  text: string | null;
  /** For analytics (top-templates); the parts above are already rendered. */
  templateId: string | null;
  tags: string[];
  /** The campaign of campaign mail (SPEC §26 analytics); absent for sequence mail. */
  campaignId?: string;
  /**
   * What its `List-Unsubscribe` headers name (`campaign:<id>`, `sequence:<id>:<step>`): the sender
   * adds them as it sends (`StoredMessage.unsubscribe` of @tern/sending).
   */
  unsubscribe: string;
  /** When it may be handed to the provider (a paced campaign, SPEC §23); default: when enqueued. */
  dueAt?: Date;
}

/**
 * The send path as campaigns and sequences see it. `enqueue` must be idempotent per email id: the
 * same ids again (a redo after a crash) change nothing and send nothing twice.
 */
export interface BulkMailer {
  enqueue(tenantId: string, mails: readonly BulkMail[], at: Date): Promise<void>;
}

/**
 * How long a claimed bulk job (a campaign's fan-out, a batch of sequence steps) stays another
 * worker's. Each chunk renews it; a worker killed mid-way hands its job over after this long. A
 * worker slower than that loses the job to another, which repeats at most the chunk in flight
 * (same email ids: no effect).
 */
export const DEFAULT_BULK_LEASE_MS = 15_000;

/** What the campaign fan-out and the sequence scheduler both run on. */
export interface BulkJobOptions {
  pool: pg.Pool;
  mailer: BulkMailer;
  now: () => Date;
  leaseMs?: number;
  pollIntervalMs?: number;
  logger?: Logger;
}

/** `em_` + 32 hex characters of SHA-256 over the parts: the same parts, the same id. */
export function derivedEmailId(...parts: string[]): string {
  return `em_${partsHash(parts).slice(0, 32)}`;
}

/**
 * `em_` + the time part of an id made at `at` (`idTime`) + 20 hex characters of SHA-256 over the
 * parts: the same parts and time, the same id; ids derived at a later time sort after.
 */
export function timedEmailId(at: Date, ...parts: string[]): string {
  return `em_${idTime(at.getTime())}${partsHash(parts).slice(0, 20)}`;
}

/**
 * The email id a bulk job hands over for `parts`: `timedEmailId` at `at` when the job's row says its
 * ids are ordered, else `derivedEmailId` (a row made before its migration, which may have handed
 * hashed ids over already). `at` must read the same on every redo of the hand-over.
 */
export function bulkEmailId(ordered: boolean, at: Date | null, ...parts: string[]): string {
  return ordered && at !== null ? timedEmailId(at, ...parts) : derivedEmailId(...parts);
}

const partsHash = (parts: string[]) => createHash('sha256').update(parts.join('\u0000')).digest('hex');

/** The content of a campaign or step: a template of the tenant with its own parts on top. */
export interface MailContent {
  templateId: string | null;
  subject: string | null;
  html: string | null;
  text: string | null;
}

// The recipient fields a template may use (a contact's, packages/bulk).
export type { Recipient };

/**
 * The Mustache source of a content: the template's parts (if it still exists) under the content's
 * own. Null when nothing is left to send (a template deleted since and no own subject/body).
 */
export async function resolveContent(
  pool: Pick<pg.Pool, 'query'>,
  tenantId: string,
  content: MailContent,
): Promise<TemplateContent | null> {
  let base: TemplateContent = { subject: '', html: null, text: null };
  if (content.templateId !== null) base = (await templateContent(pool, tenantId, content.templateId)) ?? base;
  const source = {
    subject: content.subject ?? base.subject,
    html: content.html ?? base.html,
    text: content.text ?? base.text,
  };
  if (source.html === null && source.text === null) return null;
  return source;
}

export interface ComposeOptions {
  id: string;
  from: string;
  /** `campaign:<id>` or `sequence:<id>:<step>`: what its `List-Unsubscribe` headers name. */
  unsubscribeSource: string;
  tags: string[];
  templateId: string | null;
  source: TemplateContent;
  recipient: Recipient;
}

/** One rendered message for one contact, naming the source of its `List-Unsubscribe` headers. */
export function composeMail(o: ComposeOptions): BulkMail {
  const r = o.recipient;
  const variables = {
    ...r.attributes,
    email: r.email,
    firstName: r.first_name ?? '',
    lastName: r.last_name ?? '',
  };
  const rendered = renderTemplate(o.source, variables);
  return {
    id: o.id,
    to: r.email,
    from: o.from,
    subject: cutSubject(rendered.subject),
    html: rendered.html,
    text: rendered.text,
    templateId: o.templateId,
    tags: o.tags,
    unsubscribe: o.unsubscribeSource,
  };
}

/** Why a recipient's message could not be composed (kept in `bulk_emails.failed_reason`). */
export type ComposeFailure = 'render_failed' | 'invalid_characters';

/** A storable, sendable string: well-formed UTF-16 (no lone surrogate) and no U+0000. */
const storable = (s: string | null) => s === null || unstorableText(s) === null;

/**
 * `composeMail`, or why this recipient's message cannot be sent: rendering threw, or a part holds
 * what Postgres and SMTP refuse (U+0000, a lone surrogate). The fan-outs skip such a recipient and
 * count it (`stats.failed`) instead of failing the chunk for everyone, forever (issue 24, item 3).
 */
export function tryComposeMail(o: ComposeOptions): { mail: BulkMail } | { failure: ComposeFailure } {
  let mail: BulkMail;
  try {
    mail = composeMail(o);
  } catch {
    return { failure: 'render_failed' };
  }
  const parts = [mail.to, mail.from, mail.subject, mail.html, mail.text, ...mail.tags, mail.unsubscribe];
  if (!parts.every(storable)) return { failure: 'invalid_characters' };
  return { mail };
}
