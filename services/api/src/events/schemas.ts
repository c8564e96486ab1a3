import {
  customEventNameSchema,
  DOMAIN_EVENT_TYPES,
  EVENT_TYPES,
  INBOUND_EVENT_TYPES,
  idSchema,
} from '@tern/contracts';
import { z } from 'zod';
import { queryInteger } from '../schemas.js';

/** Schemas of `GET /events` and `GET /events/stream` (SPEC §25). */

export const MAX_EVENTS_LIMIT = 1000;
const CURSOR_MESSAGE = 'after must be a cursor: the `cursor` of an event (digits)';

const cursorSchema = z
  .string({ error: CURSOR_MESSAGE })
  .regex(/^[0-9]{1,18}$/, { error: CURSOR_MESSAGE })
  .meta({ description: 'An event’s `cursor` (or a page’s `next`): only events after it.', example: '1042' });

const text = (field: string, description: string, example: string) =>
  z
    .string({ error: `${field} must be a string of 1 to 256 characters` })
    .min(1, { error: `${field} must be a string of 1 to 256 characters` })
    .max(256, { error: `${field} must be a string of 1 to 256 characters` })
    .optional()
    .meta({ description, example });

const LOG_TYPES = [...EVENT_TYPES, ...INBOUND_EVENT_TYPES, ...DOMAIN_EVENT_TYPES];
const TYPES_MESSAGE = `types must be a comma list of ${LOG_TYPES.join(', ')} or custom event names`;
const STREAM_TYPES: ReadonlySet<string> = new Set(LOG_TYPES);
/** A delivery, inbound or domain event type, or a custom event's name (`POST /events/track`, SPEC §27). */
const isStreamType = (t: string) => STREAM_TYPES.has(t) || customEventNameSchema.safeParse(t).success;

export const eventFiltersSchema = z.object({
  types: z
    .string({ error: TYPES_MESSAGE })
    .max(1000, { error: TYPES_MESSAGE })
    .transform((s) => [...new Set(s.split(',').map((t) => t.trim()))])
    .pipe(z.array(z.string().refine(isStreamType, { error: TYPES_MESSAGE })))
    .optional()
    .meta({
      type: 'string',
      description:
        'Only these event types (a comma list): delivery, inbound (`email.received`) and domain (`domain.*`) event types, and custom event names.',
      example: 'email.delivered,email.bounced',
    }),
  emailId: idSchema('emailId')
    .optional()
    .meta({ description: 'Only the events of this email.', example: 'em_01' }),
  tag: text('tag', 'Only the events of emails with this tag.', 'receipt'),
  project: idSchema('project').optional().meta({
    description: 'Only the events of this project’s emails.',
    example: 'prj_4Hs9dK2mQ7wE1rT6yU3iO8pA',
  }),
});

const BEFORE_MESSAGE = 'before must be a cursor: the `cursor` of an event (digits)';
const ORDER_MESSAGE = 'order must be stream or newest';

export const eventsQuerySchema = eventFiltersSchema.extend({
  after: cursorSchema.optional(),
  limit: queryInteger('limit', 1, MAX_EVENTS_LIMIT, 100),
  order: z
    .enum(['stream', 'newest'], { error: ORDER_MESSAGE })
    .default('stream')
    .meta({
      description:
        '`stream` (default): the stream’s order, after `after`. `newest`: the newest events first (a dashboard’s ' +
        'view), before `before`; `next` is then the page’s oldest cursor, to pass as `before`.',
      example: 'newest',
    }),
  before: z
    .string({ error: BEFORE_MESSAGE })
    .regex(/^[0-9]{1,18}$/, { error: BEFORE_MESSAGE })
    .optional()
    .meta({ description: 'With `order=newest`: only events before this cursor.', example: '1042' }),
});

export const streamQuerySchema = eventFiltersSchema.extend({ after: cursorSchema.optional() });

const EXAMPLE_EVENT = {
  id: 'em_01:delivered',
  cursor: '1042',
  type: 'email.delivered',
  timestamp: '2026-11-20T10:00:05.000Z',
  data: {
    emailId: 'em_01',
    tenantId: 'acme',
    projectId: null,
    to: 'ada@example.com',
    subject: 'Your receipt',
    tags: ['receipt'],
    status: 'DELIVERED',
  },
};

export const streamEventSchema = z
  .object({
    id: z.string().meta({ description: 'The event id (the `webhook-id` of its webhook delivery).' }),
    cursor: z.string().meta({ description: 'Its position in the tenant’s stream: pass it as `after`.' }),
    type: z.string(),
    timestamp: z.string().meta({ description: 'The event’s `occurredAt`.' }),
    data: z
      .record(z.string(), z.unknown())
      .meta({ description: 'As in its webhook (SPEC §17); an erased recipient’s fields are null.' }),
  })
  .meta({ examples: [EXAMPLE_EVENT] });

export const eventsResponseSchema = z
  .object({
    data: z.array(streamEventSchema),
    next: z.string().meta({
      description:
        'Pass as `after` for the next page (or to poll): every event up to it was read, whether it matched the filters or not.',
    }),
    hasMore: z.boolean().meta({ description: 'The page is full: more events follow now.' }),
  })
  .meta({ examples: [{ data: [EXAMPLE_EVENT], next: '1042', hasMore: false }] });
