import { z } from 'zod';
import { attachmentMetaSchema } from './attachments.js';
import { EVENT_TYPES } from './events.js';
import { emailLogEntrySchema } from './http.js';
import { emailStatusSchema } from './status.js';

/**
 * Sending (SPEC §11): the answers of `POST /emails/send|batch`, `GET /emails/:id`,
 * `POST /emails/:id/cancel`, `GET /emails/:id/content`, and the message as handed to the
 * provider. The bodies are in `emails.ts`.
 */

const EMAIL_ID = 'em_3kT9qLm2ZxV7bN4cR8sW1yPd';

/** Read-your-writes (SPEC §25): pass it as `Tern-Consistent-With` on a read. */
const positionSchema = z.string().meta({
  description:
    'The position of this write: its last event’s id on each partition of the event log it went to, joined by `,` ' +
    '(one id for one email). A read sent with `Tern-Consistent-With: <position>` waits until the whole write is projected.',
});

export const sendEmailResponseSchema = z.object({ id: z.string(), position: positionSchema }).meta({
  description: 'Queued: `email.queued` is in the event log.',
  examples: [{ id: EMAIL_ID, position: `${EMAIL_ID}:queued` }],
});
export type SendEmailResponse = z.infer<typeof sendEmailResponseSchema>;

export const batchEmailResponseSchema = z
  .object({ data: z.array(sendEmailResponseSchema), position: positionSchema })
  .meta({
    description:
      'Every email queued; ids in input order. Each email’s own `position`, and the batch’s: the last email on each partition of the log.',
    examples: [
      {
        data: [
          { id: EMAIL_ID, position: `${EMAIL_ID}:queued` },
          { id: 'em_7Hc2WnQ5rT1vX9kL3mB6zYpa', position: 'em_7Hc2WnQ5rT1vX9kL3mB6zYpa:queued' },
        ],
        // The two emails on two partitions of the log: the batch's position names both.
        position: `${EMAIL_ID}:queued,em_7Hc2WnQ5rT1vX9kL3mB6zYpa:queued`,
      },
    ],
  });
export type BatchEmailResponse = z.infer<typeof batchEmailResponseSchema>;

export const cancelEmailResponseSchema = z.object({ id: z.string(), status: z.literal('CANCELLED') }).meta({
  description: 'Cancelled: it will never be sent.',
  examples: [{ id: EMAIL_ID, status: 'CANCELLED' }],
});

export const emailTimelineEventSchema = z.object({
  type: z.enum(EVENT_TYPES),
  occurredAt: z.string(),
  data: z.record(z.string(), z.unknown()),
});

/**
 * One recipient of an email and its own last outcome (SPEC §22): the fold of the email's events
 * that name it or name no recipient (docs/sending.md § "Several recipients").
 */
export const emailRecipientSchema = z.object({
  email: z.string(),
  type: z.enum(['to', 'cc', 'bcc']),
  status: emailStatusSchema,
});
export type EmailRecipient = z.infer<typeof emailRecipientSchema>;

/** `GET /emails/:id`: the log entry plus its details and its timeline, oldest event first. */
export const emailDetailSchema = emailLogEntrySchema
  .extend({
    /** Every `to` (the log entry's `toEmail` is the first). */
    to: z.array(z.string()),
    recipients: z.array(emailRecipientSchema),
    from: z.string().nullable(),
    cc: z.array(z.string()),
    bcc: z.array(z.string()),
    replyTo: z.string().nullable(),
    scheduledAt: z.string().nullable(),
    projectId: z.string().nullable(),
    templateId: z.string().nullable(),
    opens: z.number().int(),
    clicks: z.number().int(),
    events: z.array(emailTimelineEventSchema),
    /** Inbound messages answering this email (SPEC §24: In-Reply-To/References name its Message-ID), oldest first. */
    replies: z
      .array(z.object({ id: z.string(), receivedAt: z.string() }))
      .optional()
      .meta({ description: 'Received replies to this email (`GET /inbound/:id`), oldest first.' }),
  })
  .meta({
    description: 'The log entry, the details of the send and the timeline (oldest first).',
    examples: [
      {
        id: EMAIL_ID,
        toEmail: 'delivered@sandbox.test',
        subject: 'Welcome',
        status: 'DELIVERED',
        provider: 'sandbox',
        messageId: `<${EMAIL_ID}@tern.example.com>`,
        createdAt: '2026-06-15T12:00:00.000Z',
        tags: ['welcome'],
        opened: false,
        clicked: false,
        complained: false,
        to: ['delivered@sandbox.test'],
        recipients: [{ email: 'delivered@sandbox.test', type: 'to', status: 'DELIVERED' }],
        from: 'Acme <hello@acme.test>',
        cc: [],
        bcc: [],
        replyTo: null,
        scheduledAt: null,
        projectId: null,
        templateId: null,
        opens: 0,
        clicks: 0,
        events: [
          {
            type: 'email.queued',
            occurredAt: '2026-06-15T12:00:00.000Z',
            data: { toEmail: 'delivered@sandbox.test' },
          },
          { type: 'email.sent', occurredAt: '2026-06-15T12:00:00.210Z', data: { provider: 'sandbox' } },
          { type: 'email.delivered', occurredAt: '2026-06-15T12:00:00.211Z', data: {} },
        ],
      },
    ],
  });
export type EmailDetail = z.infer<typeof emailDetailSchema>;

/** A message as handed to the provider (after rendering and tracking). */
export const renderedMessageSchema = z.object({
  messageId: z.string(),
  from: z.string(),
  /** As the send gave it: one address, or the list (SPEC §22). */
  to: z.union([z.string(), z.array(z.string())]),
  cc: z.array(z.string()),
  bcc: z.array(z.string()),
  replyTo: z.string().nullable(),
  subject: z.string(),
  html: z.string().nullable(),
  text: z.string().nullable(),
  headers: z.record(z.string(), z.string()),
  /**
   * The DKIM signature the message carries (SMTP) or would carry (the sandbox keeps it unsigned):
   * the verified domain (`d=`) and selector (`s=`) — null when no verified domain covers the From
   * address (SPEC §20). Absent on messages kept before domains existed.
   */
  dkim: z.object({ domain: z.string(), selector: z.string() }).nullable().optional().meta({
    description: 'DKIM `d=` and `s=` it is (or, in the sandbox, would be) signed with; null: unsigned.',
  }),
  /** The files it carries, without their bytes (those stay sealed in `email_attachments`). */
  attachments: z.array(attachmentMetaSchema).optional(),
});
export type RenderedMessage = z.infer<typeof renderedMessageSchema>;

export const emailContentSchema = renderedMessageSchema.extend({ id: z.string(), sentAt: z.string() }).meta({
  description: 'The message as the sandbox received it: rendered, with tracking applied.',
  examples: [
    {
      id: EMAIL_ID,
      sentAt: '2026-06-15T12:00:00.210Z',
      messageId: `<${EMAIL_ID}@tern.example.com>`,
      from: 'Acme <hello@acme.test>',
      to: 'delivered@sandbox.test',
      cc: [],
      bcc: [],
      replyTo: null,
      subject: 'Welcome',
      html: '<p>Hi there</p><img src="https://tern.example.com/t/o/…" width="1" height="1" alt="" />',
      text: null,
      headers: { 'X-Tern-Email-Id': EMAIL_ID },
    },
  ],
});
