import { z } from 'zod';
import type { DomainEvent, DomainEventType } from './domains.js';
import { WEBHOOK_EVENT_TYPES } from './log-events.js';
import { nullableString } from './resources.js';

/** Outgoing webhooks (SPEC §17): bodies and answers of `/webhooks*`. */

/** Delivery events (SPEC §5) and sending-domain events (SPEC §20). */
export const webhookEventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES, {
  error: `events must contain only ${WEBHOOK_EVENT_TYPES.join(', ')}`,
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

export const createWebhookBodySchema = z
  .strictObject({
    url: urlField,
    events: eventsField.nullable().optional(),
    description: descriptionField.nullable().optional(),
  })
  .meta({
    examples: [
      {
        url: 'https://hooks.example.com/tern',
        events: ['email.delivered', 'email.bounced'],
        description: 'CRM sync',
      },
    ],
  });
export type CreateWebhookBody = z.infer<typeof createWebhookBodySchema>;

export const updateWebhookBodySchema = z
  .strictObject({
    url: urlField.optional(),
    events: eventsField.nullable().optional(),
    description: descriptionField.nullable().optional(),
    enabled: z.boolean({ error: 'enabled must be a boolean' }).optional(),
  })
  .refine((body) => Object.keys(body).length > 0, { error: 'body must change at least one field' })
  .meta({ examples: [{ events: null, enabled: true }] });
export type UpdateWebhookBody = z.infer<typeof updateWebhookBodySchema>;

const webhookFields = z.object({
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
export type Webhook = z.infer<typeof webhookFields>;

/** Examples shown in the API reference (docs/api.md). */
export const WEBHOOK_EXAMPLE: Webhook = {
  id: 'wh_7Gq2vN9xKp4sLm3Tz8Rb1Wc5',
  url: 'https://hooks.example.com/tern',
  events: ['email.delivered', 'email.bounced'],
  description: 'CRM sync',
  enabled: true,
  disabledReason: null,
  failingSince: null,
  createdAt: '2026-11-20T09:30:00.000Z',
  updatedAt: '2026-11-20T09:30:00.000Z',
};
export const webhookSchema = webhookFields.meta({ examples: [WEBHOOK_EXAMPLE] });

/** Answer of create and rotate: the only times the secret is shown. */
export const webhookWithSecretSchema = webhookFields
  .extend({
    secret: z.string().meta({ description: '`whsec_` + base64 of 32 random bytes. Shown only here.' }),
  })
  .meta({
    examples: [{ ...WEBHOOK_EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw8TkzPR0yPIc=' }],
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

export const webhookDeliverySchema = z
  .object({
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
  })
  .meta({
    examples: [
      {
        id: 'whd_1024',
        webhookId: 'evt_01JD7Q2W8K4M6N9P3R5T7V9X1Z',
        eventType: 'email.delivered',
        emailId: 'em_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        replayId: null,
        status: 'delivered',
        attempts: [
          {
            attempt: 1,
            startedAt: '2026-11-20T09:31:02.114Z',
            durationMs: 2140,
            statusCode: 503,
            error: 'HTTP 503',
            responseExcerpt: 'upstream unavailable',
          },
          {
            attempt: 2,
            startedAt: '2026-11-20T09:31:07.300Z',
            durationMs: 84,
            statusCode: 200,
            error: null,
            responseExcerpt: 'ok',
          },
        ],
        nextAttemptAt: null,
        lastStatusCode: 200,
        lastError: null,
        createdAt: '2026-11-20T09:31:02.000Z',
        updatedAt: '2026-11-20T09:31:07.384Z',
      },
    ],
  });
export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;

const isoInstant = (what: string) =>
  z.iso.datetime({ offset: true, error: `${what} must be an ISO 8601 timestamp with a zone` });

const REPLAY_CURSOR_MESSAGE = 'after must be a cursor: the `cursor` of an event (digits)';

export const replayWebhookBodySchema = z
  .strictObject({
    since: isoInstant('since').optional().meta({
      description: 'Start of a time window (with `until`): events with `occurredAt` in [since, until).',
    }),
    until: isoInstant('until').optional().meta({ description: 'End of the time window; default now.' }),
    after: z
      .string({ error: REPLAY_CURSOR_MESSAGE })
      .regex(/^[0-9]{1,18}$/, { error: REPLAY_CURSOR_MESSAGE })
      .optional()
      .meta({
        description:
          'A cursor of the event stream (`GET /events`): every event after it, in stream order (instead of a window).',
        example: '1042',
      }),
  })
  .superRefine((body, ctx) => {
    if ((body.since === undefined) === (body.after === undefined))
      ctx.addIssue({
        code: 'custom',
        path: [body.since === undefined ? 'since' : 'after'],
        message: 'give either since (a time window) or after (a cursor), not both',
      });
    else if (body.after !== undefined && body.until !== undefined)
      ctx.addIssue({ code: 'custom', path: ['until'], message: 'until goes with since, not with after' });
  })
  .meta({
    examples: [{ since: '2026-11-19T00:00:00Z', until: '2026-11-20T00:00:00Z' }, { after: '1042' }],
  });
export type ReplayWebhookBody = z.infer<typeof replayWebhookBodySchema>;

export const webhookReplaySchema = z
  .object({
    id: z.string(),
    webhookId: z.string(),
    since: nullableString('A window replay: its start; null for a cursor replay.'),
    until: nullableString('A window replay: its end; null for a cursor replay.'),
    after: nullableString('A cursor replay: the cursor given; null for a window replay.'),
    through: z.string().nullable().meta({
      description:
        'A cursor replay: the last cursor it covers (the stream’s head when asked, or the 10 000th matching event).',
    }),
    hasMore: z.boolean().meta({
      description:
        'A cursor replay stopped at 10 000 events: replay again with `after` = `through` for the rest.',
    }),
    status: z.enum(['pending', 'running', 'done']),
  })
  .meta({
    examples: [
      {
        id: 'rpl_Qm3vX8kP2sT9wL4nB7cZ1dF6',
        webhookId: 'wh_7Gq2vN9xKp4sLm3Tz8Rb1Wc5',
        since: '2026-11-19T00:00:00.000Z',
        until: '2026-11-20T00:00:00.000Z',
        after: null,
        through: null,
        hasMore: false,
        status: 'pending',
      },
      {
        id: 'rpl_Xw2nB8kQ4sT7vL9mC3dF1gH6',
        webhookId: 'wh_7Gq2vN9xKp4sLm3Tz8Rb1Wc5',
        since: null,
        until: null,
        after: '1042',
        through: '1318',
        hasMore: false,
        status: 'pending',
      },
    ],
  });
export type WebhookReplay = z.infer<typeof webhookReplaySchema>;

/** The JSON body of a delivery of an email's event (Standard Webhooks: `{ type, timestamp, data }`). */
export interface WebhookPayload {
  type: string;
  /** The event's `occurredAt`. */
  timestamp: string;
  data: {
    emailId: string;
    tenantId: string;
    /** The project of the email's defining `email.queued`; null without one. */
    projectId: string | null;
    to: string | null;
    subject: string | null;
    tags: string[];
    status: string | null;
    /** The event's own `data` fields, merged in. */
    [field: string]: unknown;
  };
}

/** The body of a delivery of `domain.verified` / `domain.failed` (SPEC §20): the domain as it was found. */
export interface DomainWebhookPayload {
  type: DomainEventType;
  timestamp: string;
  data: { domainId: string; tenantId: string } & DomainEvent['data'];
}
