import emailAddresses from 'email-addresses';
import { z } from 'zod';
import { attachmentsSchema } from './attachments.js';
import { idSchema } from './ids.js';
import { isRelayHeader, isTraceHeader, relayHeaderRefusal } from './relay-headers.js';
import { tagsSchema, tagTexts } from './tags.js';

/**
 * Sending (SPEC §11): the bodies of `POST /emails/send|batch` and what they are built from
 * (addresses, mailboxes, headers, variables; tags in `tags.ts`), and the tenant's tracking
 * settings. The answers of the email routes are in `email-responses.ts`.
 */

/** Largest content of one email: subject + html + text + headers + variables, UTF-8 bytes. */
export const MAX_CONTENT_BYTES = 256 * 1024;
export const MAX_BATCH = 100;
export const MAX_CC = 50;
/** Most addresses of one message: to + cc + bcc (SPEC §22). */
export const MAX_RECIPIENTS = 50;
/** `scheduledAt` may be at most this far ahead. */
export const MAX_SCHEDULE_AHEAD_MS = 30 * 86_400_000;
export const IDEMPOTENCY_KEY_MAX = 256;

// The same rule as the events' toEmail (SPEC §5), so every accepted send is a valid email.queued.
const plainAddress = z.email().max(320);
const isAddress = (s: string) => plainAddress.safeParse(s).success;

/** A bare address. */
const address = (field: string) =>
  z
    .string({ error: `${field} must be an email address` })
    .max(320, { error: `${field} must be at most 320 characters` })
    .refine(isAddress, { error: `${field} must be an email address` });

/** `addr@example.com` or `Display Name <addr@example.com>` (Resend's `from`). */
const mailbox = (field: string) =>
  z
    .string({ error: `${field} must be an email address or "Name <address>"` })
    .max(320, { error: `${field} must be at most 320 characters` })
    .refine((v) => parseMailbox(v) !== null, {
      error: `${field} must be an email address or "Name <address>"`,
    });

/** No RFC 5322 structure character: no name, quote, comment, list, group or route. */
const BARE = /^[^\s<>"(),;:\\[\]]+$/;
const parsedMailboxes = new Map<string, Readonly<{ name: string | null; address: string }> | null>();

/**
 * Splits a mailbox — `addr@example.com` or `Display Name <addr@example.com>` (the name may be
 * quoted, RFC 5322) — into its parts; null for anything else: a list (`a@evil.test,
 * <hello@acme.test>`), a group, two addresses, a line break. The one parser of `from` everywhere
 * (the API's check, the sender, the domain policy, the SMTP provider): RFC 5322 by
 * `email-addresses`, so what is checked is what is sent (issue 24, item 9).
 */
export function parseMailbox(value: string): Readonly<{ name: string | null; address: string }> | null {
  if (/[\r\n]/.test(value)) return null;
  // A bare address with none of RFC 5322's structure characters (no name, quote, comment, list,
  // group or route) is that address: the parser would answer the same, at many times the cost.
  if (BARE.test(value) && isAddress(value)) return Object.freeze({ name: null, address: value });
  const known = parsedMailboxes.get(value);
  if (known !== undefined) return known;
  const parsed = emailAddresses.parseOneAddress({ input: value.trim(), rfc6532: true });
  const name = parsed?.type === 'mailbox' ? (parsed.name?.trim() ?? '') : '';
  const result =
    parsed === null || parsed.type !== 'mailbox' || !isAddress(parsed.address)
      ? null
      : Object.freeze({ name: name === '' ? null : name, address: parsed.address });
  // The same `from` comes back with every email of a campaign or a batch: answers are kept (a few hundred).
  if (parsedMailboxes.size >= 512) parsedMailboxes.clear();
  parsedMailboxes.set(value, result);
  return result;
}

/**
 * A mailbox written back as one unambiguous header value: the name quoted (`"` and `\` escaped),
 * so no mail library can read a comma, `@` or `<` in it as another address.
 */
export function formatMailbox(mailbox: { name: string | null; address: string }): string {
  if (mailbox.name === null) return mailbox.address;
  return `"${mailbox.name.replace(/[\\"]/g, (c) => `\\${c}`)}" <${mailbox.address}>`;
}

const addressList = (field: string) =>
  z
    .array(address(`${field}[]`), { error: `${field} must be an array of email addresses` })
    .max(MAX_CC, { error: `${field} must have at most ${MAX_CC} addresses` });

/**
 * `to` (SPEC §22): one address, or an array of 1..50 (Resend's form). Kept as given: a string stays
 * a string, so what was sent before arrays reads the same; `recipientsOf` gives the list.
 */
export const toSchema = z.union(
  [
    address('to'),
    z
      .array(address('to[]'), { error: 'to must be an email address or an array of email addresses' })
      // At most 50 with cc and bcc: the body's check counts them together.
      .min(1, { error: 'to must have at least 1 address' }),
  ],
  { error: 'to must be an email address or an array of email addresses' },
);
export type To = z.infer<typeof toSchema>;

/** The `to` recipients of a message as a list (`to` first); a stored `to` that is neither gives []. */
export function recipientsOf(to: unknown): string[] {
  if (typeof to === 'string') return [to];
  return Array.isArray(to) ? to.filter((a): a is string => typeof a === 'string') : [];
}

/**
 * Every recipient of a message, each once (compared lowercased, the first spelling kept), in the
 * order to, cc, bcc, with its kind: the envelope of the message (SPEC §22).
 */
export function envelopeOf(message: {
  to?: unknown;
  cc?: unknown;
  bcc?: unknown;
}): { address: string; kind: 'to' | 'cc' | 'bcc' }[] {
  const seen = new Set<string>();
  const out: { address: string; kind: 'to' | 'cc' | 'bcc' }[] = [];
  const add = (list: string[], kind: 'to' | 'cc' | 'bcc') => {
    for (const entry of list) {
      const address = parseMailbox(entry)?.address ?? entry.trim();
      const key = address.toLowerCase();
      if (key === '' || seen.has(key)) continue;
      seen.add(key);
      out.push({ address, kind });
    }
  };
  add(recipientsOf(message.to), 'to');
  add(recipientsOf(message.cc), 'cc');
  add(recipientsOf(message.bcc), 'bcc');
  return out;
}

/** Headers a caller may not set: Tern writes them (or they are recipients in disguise). */
export const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'reply-to',
  'subject',
  'message-id',
  'date',
  'sender',
  'content-type',
  'content-transfer-encoding',
  'mime-version',
  // Tern signs and sets the return path itself (SPEC §20).
  'dkim-signature',
  'return-path',
]);

/**
 * Whether a caller may not set header `name`: one of `RESERVED_HEADERS` or Tern's own `X-Tern-*`
 * (e.g. `X-Tern-Email-Id`, which the sender sets), compared case-insensitively (issue 24, item 9:
 * `x-tern-email-id` gave a message two such headers, the spoofed one first); a relay or trace
 * header (issue 40 item 5).
 */
export const isReservedHeader = (name: string): boolean => {
  const lower = name.toLowerCase();
  return (
    RESERVED_HEADERS.has(lower) || lower.startsWith('x-tern-') || isRelayHeader(lower) || isTraceHeader(lower)
  );
};

const headersSchema = z
  .record(
    z
      .string()
      .min(1)
      .max(100)
      .regex(/^[!-9;-~]+$/, { error: 'header names are printable ASCII without ":"' }),
    z
      .string()
      .max(998)
      .refine((v) => !/[\r\n]/.test(v), { error: 'header values must not contain line breaks' }),
  )
  .refine((h) => Object.keys(h).length <= 50, { error: 'headers must have at most 50 entries' })
  .superRefine((h, ctx) => {
    const refusal = relayHeaderRefusal(Object.keys(h));
    if (refusal !== null) ctx.addIssue({ code: 'custom', message: `headers: ${refusal}` });
    else if (Object.keys(h).some(isReservedHeader))
      ctx.addIssue({
        code: 'custom',
        message: `headers must not set ${[...RESERVED_HEADERS].join(', ')}, any X-Tern-* header, or a trace header (Received, ARC-*, Resent-*, Authentication-Results, Disposition-Notification-To, Return-Receipt-To, Delivered-To, X-Original-To), in any case`,
      });
  });

const variablesSchema = z
  .record(
    z.string().max(200),
    z.union([z.string(), z.number(), z.boolean(), z.null()], {
      error: 'variables values must be strings, numbers, booleans or null',
    }),
  )
  .refine((v) => Object.keys(v).length <= 500, { error: 'variables must have at most 500 entries' });

const utf8 = (s: string | undefined) => (s === undefined ? 0 : Buffer.byteLength(s, 'utf8'));

/** `POST /emails/send` body (SPEC §11). Clock-dependent checks (`scheduledAt`) happen in the route. */
export const sendEmailBodySchema = z
  .strictObject({
    from: mailbox('from'),
    to: toSchema,
    cc: addressList('cc').optional(),
    bcc: addressList('bcc').optional(),
    replyTo: address('replyTo').optional(),
    subject: z
      .string()
      .max(998, { error: 'subject must be at most 998 characters' })
      // A header value: a line break would end it (issue 24, item 15).
      .refine((v) => !/[\r\n]/.test(v), { error: 'subject must not contain line breaks' })
      .optional(),
    html: z.string().optional(),
    text: z.string().optional(),
    templateId: idSchema('templateId').optional(),
    variables: variablesSchema.optional(),
    tags: tagsSchema.optional(),
    headers: headersSchema.optional(),
    scheduledAt: z.iso
      .datetime({ offset: true, error: 'scheduledAt must be an ISO 8601 timestamp' })
      .optional(),
    projectId: idSchema('projectId').optional(),
    attachments: attachmentsSchema.optional(),
  })
  .superRefine((body, ctx) => {
    const recipients = recipientsOf(body.to).length + (body.cc?.length ?? 0) + (body.bcc?.length ?? 0);
    if (recipients > MAX_RECIPIENTS) {
      ctx.addIssue({
        code: 'custom',
        path: ['to'],
        message: `to, cc and bcc must have at most ${MAX_RECIPIENTS} addresses together (got ${recipients})`,
      });
    }
    if (body.templateId === undefined) {
      if (body.subject === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['subject'],
          message: 'subject is required without templateId',
        });
      }
      if (body.html === undefined && body.text === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['html'],
          message: 'html or text is required without templateId',
        });
      }
    }
    const size =
      utf8(body.subject) +
      utf8(body.html) +
      utf8(body.text) +
      utf8(body.headers && JSON.stringify(body.headers)) +
      utf8(body.variables && JSON.stringify(body.variables));
    if (size > MAX_CONTENT_BYTES) {
      ctx.addIssue({
        code: 'custom',
        path: ['html'],
        message: `content (subject, html, text, headers, variables) must be at most 256 KiB (got ${size} bytes)`,
      });
    }
  })
  .meta({
    description:
      'One message (one email id) to 1..50 addresses (`to` + `cc` + `bcc`). Needs `subject` and `html` or `text`, or a `templateId` rendered with `variables`.',
    examples: [
      {
        from: 'Acme <hello@acme.test>',
        to: 'delivered@sandbox.test',
        subject: 'Welcome',
        html: '<p>Hi there</p>',
        tags: ['welcome'],
      },
      {
        from: 'Acme <billing@acme.test>',
        to: ['ada@example.com', 'bob@example.com'],
        cc: ['accounts@example.com'],
        bcc: ['archive@acme.test'],
        subject: 'Your invoice',
        text: 'Attached.',
        tags: [{ name: 'category', value: 'invoice' }],
      },
    ],
  });
export type SendEmailBody = z.infer<typeof sendEmailBodySchema>;
/** The body as a caller writes it (`tags` may be `{ name, value }`): what the SDK takes. */
export type SendEmailInput = z.input<typeof sendEmailBodySchema>;
/** The body with its tags as stored (strings): what `outgoing_emails.message` holds. */
export type NormalizedSendEmailBody = Omit<SendEmailBody, 'tags'> & { tags?: string[] };

/** The body as stored: Resend-style tags written `name:value` (SPEC §22). */
export function normalizeSendBody(body: SendEmailBody): NormalizedSendEmailBody {
  const { tags, ...rest } = body;
  return tags === undefined ? rest : { ...rest, tags: tagTexts(tags) };
}

export const batchEmailBodySchema = z
  .array(sendEmailBodySchema)
  .min(1, { error: 'the batch must contain at least 1 email' })
  .max(MAX_BATCH, { error: `the batch must contain at most ${MAX_BATCH} emails` })
  .meta({
    description: '1..100 send bodies.',
    examples: [
      [
        {
          from: 'Acme <hello@acme.test>',
          to: 'delivered@sandbox.test',
          subject: 'Hi Ada',
          text: 'Hello Ada',
        },
        { from: 'Acme <hello@acme.test>', to: 'bounced@sandbox.test', subject: 'Hi Bob', text: 'Hello Bob' },
      ],
    ],
  });
export type BatchEmailBody = z.infer<typeof batchEmailBodySchema>;

/** `tracking` of the tenant settings (SPEC §11), default both on. */
export const trackingSettingsSchema = z.strictObject({
  opens: z.boolean({ error: 'tracking.opens must be a boolean' }),
  clicks: z.boolean({ error: 'tracking.clicks must be a boolean' }),
});
export type TrackingSettings = z.infer<typeof trackingSettingsSchema>;
export const DEFAULT_TRACKING: TrackingSettings = { opens: true, clicks: true };
