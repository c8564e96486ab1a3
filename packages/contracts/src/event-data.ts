import { z } from 'zod';
import { isoTimestamp, nonEmpty } from './event-fields.js';
import { idSchema } from './ids.js';

/**
 * The `data` of each delivery event (SPEC §5), as consumers read it (and `email.queued`'s as the
 * event log holds it, sealed); the events themselves, their envelope and their union are in
 * `events.ts`.
 */

/**
 * `email.queued` as consumers read it. `toEmail` and `subject` are personal data: in the event log
 * they travel sealed (`emailQueuedSealedData`); a consumer gets them opened, or `null` once the
 * recipient was erased or the month's key expired (SPEC §14, crypto-shredding). Ingest refuses
 * `null` (`validateEvents`): only erasure makes them null.
 */
export const emailQueuedData = z.strictObject({
  toEmail: z.email({ error: 'toEmail must be an email address' }).max(320).nullable(),
  subject: z.string({ error: 'subject must be a string' }).max(998).nullable(),
  templateId: idSchema('templateId').optional(),
  tags: z.array(nonEmpty('tag', 256)).max(50, { error: 'tags must have at most 50 items' }).optional(),
  from: z.string().max(320).optional(),
  scheduledAt: isoTimestamp('scheduledAt').optional(),
  /** The email's project (SPEC §16); logs and analytics can be narrowed to it. */
  projectId: idSchema('projectId').optional(),
  /** The campaign of campaign mail (SPEC §26): analytics can be sliced by it. */
  campaignId: idSchema('campaignId').optional(),
});
/** Personal fields sealed with AES-256-GCM under the (tenant, recipient hash `rh`, UTC month `p`) data key. */
export const sealedFieldsSchema = z.strictObject({
  v: z.literal(1),
  rh: z.string().min(1).max(64),
  p: z.string().regex(/^\d{4}-\d{2}$/),
  iv: z.string().max(32),
  ct: z.string().max(16_000),
  tag: z.string().max(32),
});
/** `email.queued` data as the event log holds it: `toEmail` and `subject` only inside `sealed`. */
export const emailQueuedSealedData = emailQueuedData.omit({ toEmail: true, subject: true }).extend({
  sealed: sealedFieldsSchema,
});

/**
 * The one recipient an outcome is about, when the message had several (SPEC §22): a DSN's
 * Final-Recipient, a provider's bounced recipient, an address suppressed out of the envelope.
 * Absent: the outcome is the whole message's. Personal: sealed under that recipient's own key
 * (`packages/privacy`), so erasing it erases this too; reads `[erased]` then (`ERASED_TEXT`).
 */
const recipientField = z
  .union([z.email().max(320), z.literal('[erased]')], { error: 'recipient must be an email address' })
  .optional();

/**
 * What a personal field reads once its data key is gone (erased, past retention): `null` for
 * `email.queued`'s recipient and subject (the contract's "erased"), this text for a required
 * field of another type; an optional one is left out.
 */
export const ERASED_TEXT = '[erased]';

export const emailSentData = z.strictObject({
  provider: nonEmpty('provider', 128),
  messageId: nonEmpty('messageId', 998),
  /**
   * The relay's own id of the message when it differs from `messageId` (the Message-ID header):
   * SES, Postmark and SendGrid name mail by it in their notifications (SPEC §21).
   */
  providerMessageId: z.string().min(1).max(998).optional(),
});
export const emailDelayedData = z.strictObject({
  reason: z.string().max(2000).optional(),
  recipient: recipientField,
});
export const emptyData = z.strictObject({}).optional().default({});
export const emailDeliveredData = z.strictObject({ recipient: recipientField });
/**
 * `smtpStatus`: the enhanced status code of the bounce (RFC 3463, e.g. `5.1.1`) or the reply code
 * a provider reports; `diagnostic`: the remote server's own words (a DSN's `Diagnostic-Code`,
 * a provider's diagnostic), kept apart from Tern's `reason` (SPEC §21).
 */
export const emailBouncedData = z.strictObject({
  bounceType: z.enum(['hard', 'soft'], { error: 'bounceType must be hard or soft' }),
  reason: z.string().max(2000).optional(),
  smtpStatus: z.string().min(1, { error: 'smtpStatus must not be empty' }).max(32).optional(),
  diagnostic: z.string().max(2000).optional(),
  recipient: recipientField,
});
export const emailFailedData = z.strictObject({ reason: nonEmpty('reason', 2000) });
export const emailSuppressedData = z.strictObject({
  reason: nonEmpty('reason', 2000),
  recipient: recipientField,
});
/**
 * `bot: true` — a known link scanner or prefetcher (SPEC §11): kept on the timeline, never counted.
 * `machine: true` — an open no person made (Apple Mail Privacy Protection's prefetch, a security
 * scanner; SPEC §21): not in `opened`/`openRate`, counted apart as `machineOpened`.
 */
export const emailOpenedData = z.strictObject({
  userAgent: z.string().max(1000).optional(),
  bot: z.boolean().optional(),
  machine: z.boolean().optional(),
});
export const emailClickedData = z.strictObject({
  url: nonEmpty('url', 4000),
  userAgent: z.string().max(1000).optional(),
  bot: z.boolean().optional(),
});
export const emailComplainedData = z.strictObject({
  feedbackType: z.string().max(200).optional(),
  recipient: recipientField,
});
