import { z } from 'zod';
import { EVENT_TYPES } from './events.js';

/** Outgoing webhooks (SPEC §17): bodies and answers of `/webhooks*`. */

export const webhookEventTypeSchema = z.enum(EVENT_TYPES, {
  error: `events must contain only ${EVENT_TYPES.join(', ')}`,
});

const urlField = z
  .string({ error: 'url must be a string' })
  .min(1, { error: 'url must not be empty' })
  .max(2048, { error: 'url must be at most 2048 characters' })
  .meta({
    description:
      'Where deliveries are POSTed: https:// (http:// too when the server allows private targets).',
  });

const eventsField = z
  .array(webhookEventTypeSchema)
  .min(1, { error: 'events must contain at least one event type (omit it for all)' })
  .refine((list) => new Set(list).size === list.length, { error: 'events must not repeat a type' })
  .meta({ description: 'Event types delivered; absent or null = every type.' });

const descriptionField = z.string().max(500, { error: 'description must be at most 500 characters' });

export const createWebhookBodySchema = z.strictObject({
  url: urlField,
  events: eventsField.nullable().optional(),
  description: descriptionField.nullable().optional(),
});
export type CreateWebhookBody = z.infer<typeof createWebhookBodySchema>;

export const updateWebhookBodySchema = z
  .strictObject({
    url: urlField.optional(),
    events: eventsField.nullable().optional(),
    description: descriptionField.nullable().optional(),
    enabled: z.boolean({ error: 'enabled must be a boolean' }).optional(),
  })
  .refine((body) => Object.keys(body).length > 0, { error: 'body must change at least one field' });
export type UpdateWebhookBody = z.infer<typeof updateWebhookBodySchema>;

export const webhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(webhookEventTypeSchema).nullable(),
  description: z.string().nullable(),
  enabled: z.boolean(),
  /** Why Tern disabled it (failing for 5 days); null when enabled or disabled by PATCH. */
  disabledReason: z.string().nullable(),
  /** Start of the current run of failed attempts; null when the last attempt succeeded. */
  failingSince: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Webhook = z.infer<typeof webhookSchema>;

/** Answer of create and rotate: the only times the secret is shown. */
export const webhookWithSecretSchema = webhookSchema.extend({
  secret: z.string().meta({ description: '`whsec_` + base64 of 32 random bytes. Shown only here.' }),
});
export type WebhookWithSecret = z.infer<typeof webhookWithSecretSchema>;

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export const webhookDeliveryStatusSchema = z.enum(WEBHOOK_DELIVERY_STATUSES, {
  error: `status must be one of ${WEBHOOK_DELIVERY_STATUSES.join(', ')}`,
});
export type WebhookDeliveryStatus = z.infer<typeof webhookDeliveryStatusSchema>;

export const webhookAttemptSchema = z.object({
  attempt: z.number().int(),
  startedAt: z.string(),
  durationMs: z.number().int(),
  statusCode: z.number().int().nullable(),
  error: z.string().nullable(),
  responseExcerpt: z.string().nullable(),
});

export const webhookDeliverySchema = z.object({
  id: z.string(),
  /** The `webhook-id` header: the event's id. */
  webhookId: z.string(),
  eventType: z.string(),
  emailId: z.string(),
  /** Id of the replay that made it; null for the live delivery. */
  replayId: z.string().nullable(),
  status: webhookDeliveryStatusSchema,
  attempts: z.array(webhookAttemptSchema),
  nextAttemptAt: z.string().nullable(),
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;

const isoInstant = (what: string) =>
  z.iso.datetime({ offset: true, error: `${what} must be an ISO 8601 timestamp with a zone` });

export const replayWebhookBodySchema = z.strictObject({
  since: isoInstant('since'),
  until: isoInstant('until').optional(),
});
export type ReplayWebhookBody = z.infer<typeof replayWebhookBodySchema>;

export const webhookReplaySchema = z.object({
  id: z.string(),
  webhookId: z.string(),
  since: z.string(),
  until: z.string(),
  status: z.enum(['pending', 'running', 'done']),
});
export type WebhookReplay = z.infer<typeof webhookReplaySchema>;

/** The JSON body of a delivery (Standard Webhooks: `{ type, timestamp, data }`). */
export interface WebhookPayload {
  type: string;
  /** The event's `occurredAt`. */
  timestamp: string;
  data: {
    emailId: string;
    tenantId: string;
    to: string | null;
    subject: string | null;
    tags: string[];
    status: string | null;
    /** The event's own `data` fields, merged in. */
    [field: string]: unknown;
  };
}
