import { DIMENSIONS, type Dimension } from '@tern/read-models';
import { z } from 'zod';
import { queryInteger } from '../schemas.js';
import { MAX_ANALYTICS_DAYS } from './schemas.js';

/** Schemas of `/analytics/breakdown` and `/analytics/deliverability` (SPEC §26). */

const dayMessage = (field: string) => `${field} must be a date YYYY-MM-DD`;
const localDate = (field: string) =>
  z
    .string({ error: dayMessage(field) })
    .regex(/^\d{4}-\d{2}-\d{2}$/, { error: dayMessage(field) })
    .refine(
      (d) =>
        !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d),
      {
        error: dayMessage(field),
      },
    )
    .optional()
    .meta({
      description: `${field === 'from' ? 'First' : 'Last'} day, inclusive, in the tenant’s time zone (with the other bound; replaces days).`,
    });

const filterValue = (dim: Dimension) =>
  z
    .string({ error: `${dim} must be a string` })
    .min(0)
    .max(256, { error: `${dim} must be at most 256 characters` })
    .optional()
    .meta({ description: `Only emails whose ${dim} is this value (empty: none).` });

const rangeFields = {
  days: queryInteger('days', 1, MAX_ANALYTICS_DAYS, 30),
  from: localDate('from'),
  to: localDate('to'),
  ...(Object.fromEntries(DIMENSIONS.map((d) => [d, filterValue(d)])) as Record<
    Dimension,
    ReturnType<typeof filterValue>
  >),
};

const bothOrNeither = (q: { from?: string | undefined; to?: string | undefined }) =>
  (q.from === undefined) === (q.to === undefined);
const ordered = (q: { from?: string | undefined; to?: string | undefined }) =>
  q.from === undefined || q.to === undefined || q.from <= q.to;
const spanOk = (q: { from?: string | undefined; to?: string | undefined }) =>
  q.from === undefined ||
  q.to === undefined ||
  Date.parse(`${q.to}T00:00:00Z`) - Date.parse(`${q.from}T00:00:00Z`) < MAX_ANALYTICS_DAYS * 86_400_000;
const BOUNDS = `from and to go together, from ≤ to, at most ${MAX_ANALYTICS_DAYS} days`;

export const breakdownQuerySchema = z
  .object({
    by: z
      .enum(DIMENSIONS as [Dimension, ...Dimension[]], {
        error: `by must be one of ${DIMENSIONS.join(', ')}`,
      })
      .meta({ description: 'The dimension of the rows.' }),
    interval: z
      .enum(['hour', 'day'], { error: 'interval must be hour or day' })
      .optional()
      .meta({ description: 'Adds a zero-filled series per row, by local hour or day.' }),
    limit: queryInteger('limit', 1, 1000, 100),
    ...rangeFields,
  })
  .refine(bothOrNeither, { error: BOUNDS, path: ['from'] })
  .refine(ordered, { error: BOUNDS, path: ['from'] })
  .refine(spanOk, { error: BOUNDS, path: ['from'] });

export const deliverabilityQuerySchema = z
  .object(rangeFields)
  .refine(bothOrNeither, { error: BOUNDS, path: ['from'] })
  .refine(ordered, { error: BOUNDS, path: ['from'] })
  .refine(spanOk, { error: BOUNDS, path: ['from'] });

const count = (description: string) => z.number().int().meta({ description });
const percent = (description: string) =>
  z.number().meta({ description: `${description}, in percent, one decimal, 0 when the denominator is 0.` });

const countersShape = {
  total: count('Emails queued in the period.'),
  sent: count('Emails with status SENT or DELIVERED.'),
  delivered: count('Emails with status DELIVERED.'),
  opened: count('Emails a person opened at least once.'),
  clicked: count('Emails a person clicked at least once.'),
  bounced: count('Emails with status BOUNCED.'),
  complained: count('Emails with at least one complaint.'),
  failed: count('Emails with status FAILED.'),
  delayed: count('Emails deferred at least once.'),
};

export const breakdownRatesSchema = z.object({
  deliveryRate: percent('delivered / sent'),
  openRate: percent('opened / sent'),
  clickRate: percent('clicked / sent'),
  bounceRate: percent('bounced / total'),
  complaintRate: percent('complained / sent'),
});

export const periodOfRangeSchema = z.object({
  from: z.string().meta({ description: 'First local day, YYYY-MM-DD.' }),
  to: z.string().meta({ description: 'Last local day, YYYY-MM-DD.' }),
  timeZone: z
    .string()
    .meta({ description: 'The tenant’s IANA time zone (settings `timeZone`; UTC by default).' }),
});

export const breakdownResponseSchema = z
  .object({
    by: z.string(),
    interval: z.enum(['hour', 'day']).nullable(),
    period: periodOfRangeSchema,
    data: z.array(
      z.object({
        key: z.string().meta({ description: 'The dimension’s value; empty string: emails without one.' }),
        ...countersShape,
        rates: breakdownRatesSchema,
        series: z
          .array(
            z.object({
              start: z.string().meta({ description: 'Start of the local hour or day (UTC instant).' }),
              ...countersShape,
            }),
          )
          .optional(),
      }),
    ),
  })
  .meta({
    description:
      'Rows of the chosen dimension, by total desc then key. A tag breakdown counts an email once per tag. Client and device are those of the email’s first human open or click; bounce is the category of a bounced email.',
    examples: [
      {
        by: 'provider',
        interval: null,
        period: { from: '2026-06-09', to: '2026-06-15', timeZone: 'Europe/Paris' },
        data: [
          {
            key: 'gmail',
            total: 120,
            sent: 118,
            delivered: 115,
            opened: 60,
            clicked: 12,
            bounced: 2,
            complained: 0,
            failed: 0,
            delayed: 3,
            rates: { deliveryRate: 97.5, openRate: 50.8, clickRate: 10.2, bounceRate: 1.7, complaintRate: 0 },
          },
        ],
      },
    ],
  });

export const deliverabilityResponseSchema = z
  .object({
    period: periodOfRangeSchema,
    providers: z.array(
      z.object({
        provider: z.string().meta({ description: 'Mailbox provider (gmail, microsoft_365, …, other).' }),
        total: countersShape.total,
        sent: countersShape.sent,
        delivered: countersShape.delivered,
        bounced: countersShape.bounced,
        complained: countersShape.complained,
        delayed: countersShape.delayed,
        deliveryRate: percent('delivered / sent'),
        bounceRate: percent('bounced / total'),
        complaintRate: percent('complained / sent'),
        deferralRate: percent('delayed / total'),
        medianDeliverySeconds: z
          .number()
          .nullable()
          .meta({ description: 'Median seconds from sent to delivered; null without deliveries.' }),
        p95DeliverySeconds: z.number().nullable().meta({ description: '95th percentile of the same.' }),
      }),
    ),
  })
  .meta({
    description: 'Deliverability per recipient mailbox provider over the period.',
    examples: [
      {
        period: { from: '2026-06-09', to: '2026-06-15', timeZone: 'Europe/Paris' },
        providers: [
          {
            provider: 'gmail',
            total: 120,
            sent: 118,
            delivered: 115,
            bounced: 2,
            complained: 0,
            delayed: 3,
            deliveryRate: 97.5,
            bounceRate: 1.7,
            complaintRate: 0,
            deferralRate: 2.5,
            medianDeliverySeconds: 1.8,
            p95DeliverySeconds: 12.4,
          },
        ],
      },
    ],
  });
