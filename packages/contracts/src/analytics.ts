import { z } from 'zod';

/**
 * The answers of `GET /analytics/breakdown` and `GET /analytics/deliverability` (SPEC §26); their
 * queries are services/api's (they check the dimensions of the read models).
 */

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
