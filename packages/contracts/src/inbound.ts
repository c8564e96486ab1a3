import { z } from 'zod';
import { idSchema } from './ids.js';

/**
 * Inbound email (SPEC §24): the `email.received` event and the shapes of the `/inbound` routes.
 * An inbound message is keyed in the log by its own id (`inb_…`), like a domain event by its
 * domain: it is no email Tern sent, so the delivery fold never sees it.
 */

export const INBOUND_EVENT_TYPES = ['email.received'] as const;
export type InboundEventType = (typeof INBOUND_EVENT_TYPES)[number];

/** An inbound message id: `inb_` + 26 characters (time-ordered). */
export const INBOUND_ID_PATTERN = /^inb_[0-9a-z]{26}$/;

/** One verdict of SPF, DKIM, DMARC or ARC as mailauth names it (`pass`, `fail`, `none`, `temperror`…). */
export const authVerdictSchema = z.string().max(32);
export const inboundAuthSchema = z.strictObject({
  spf: authVerdictSchema,
  dkim: authVerdictSchema,
  dmarc: authVerdictSchema,
  arc: authVerdictSchema,
});
export type InboundAuth = z.infer<typeof inboundAuthSchema>;

/**
 * What `email.received` carries: the addresses and subject are personal (sealed in the log under
 * the sender's data key, SPEC §14); the body, headers and attachments never enter the log.
 */
export const emailReceivedData = z.strictObject({
  from: z.string().max(998),
  to: z.array(z.string().max(320)).max(100),
  subject: z.string().max(998).nullable(),
  messageId: z.string().max(998).nullable(),
  size: z.number().int().nonnegative(),
  attachments: z.number().int().nonnegative(),
  auth: inboundAuthSchema,
  inReplyTo: idSchema('inReplyTo').nullable(),
  /** The route that acted (SPEC §24); absent or null: none matched. */
  routeId: idSchema('routeId').nullable().optional(),
  /**
   * When a route acted: the only endpoints the message is announced to (its `webhook` actions;
   * empty: nobody). Absent: every endpoint subscribed to `email.received`.
   */
  webhooks: z.array(z.string().max(64)).max(10).optional(),
});

export const emailReceived = z.strictObject({
  id: idSchema('id'),
  type: z.literal('email.received'),
  tenantId: idSchema('tenantId'),
  inboundId: idSchema('inboundId'),
  occurredAt: z.iso.datetime({ offset: true, error: 'occurredAt must be an ISO 8601 timestamp' }),
  data: emailReceivedData,
});
export const inboundEventSchema = emailReceived;
export type InboundEvent = z.infer<typeof emailReceived>;

/** The personal fields of `email.received` (sealed in the log; an erasure makes them unreadable). */
export const INBOUND_PERSONAL_FIELDS = ['from', 'to', 'subject', 'messageId'] as const;

/** A record that names itself an inbound event (a cheap look before the schema). */
export function looksLikeInboundEvent(json: unknown): boolean {
  const type = (json as { type?: unknown } | null)?.type;
  return typeof type === 'string' && (INBOUND_EVENT_TYPES as readonly string[]).includes(type);
}

// --- HTTP shapes ---------------------------------------------------------------------------------

export const inboundAttachmentSchema = z.object({
  id: z.string(),
  filename: z.string().nullable(),
  contentType: z.string(),
  size: z.number().int(),
  contentId: z.string().nullable(),
});

export const inboundMessageSchema = z.object({
  id: z.string(),
  from: z.string().nullable(),
  to: z.array(z.string()),
  cc: z.array(z.string()),
  subject: z.string().nullable(),
  text: z.string().nullable(),
  html: z.string().nullable(),
  headers: z.array(z.object({ name: z.string(), value: z.string() })),
  attachments: z.array(inboundAttachmentSchema),
  auth: inboundAuthSchema,
  clientIp: z.string().nullable(),
  helo: z.string().nullable(),
  messageId: z.string().nullable(),
  inReplyTo: z.string().nullable(),
  receivedAt: z.string(),
});
export type InboundMessage = z.infer<typeof inboundMessageSchema>;

export const inboundSummarySchema = inboundMessageSchema.pick({
  id: true,
  from: true,
  to: true,
  subject: true,
  auth: true,
  inReplyTo: true,
  receivedAt: true,
  attachments: true,
});
export type InboundSummary = z.infer<typeof inboundSummarySchema>;

/** `:id` of a received message: `GET /inbound/:id` and its parts, and the MCP tool `get_inbound`. */
export const inboundIdParamsSchema = z.object({
  id: z.string().max(64).meta({ example: 'inb_0mif3x2k9a8b7c6d5e4f3g2h1i' }),
});

export const inboundListQuerySchema = z.strictObject({
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number({ error: 'limit must be a number' }).int().min(1).max(100).default(20),
  to: z.string().max(320).optional(),
  from: z.string().max(320).optional(),
  since: z.iso.datetime({ offset: true, error: 'since must be an ISO 8601 timestamp' }).optional(),
});
export type InboundListQuery = z.infer<typeof inboundListQuerySchema>;
