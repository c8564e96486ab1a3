import { z } from 'zod';
import { asOfHeaderDoc, projectFilter, queryInteger } from '../schemas.js';

/** Schemas of `/tenants/:id/analytics/*` (SPEC §6): requests, responses and their OpenAPI. */

export const MAX_ANALYTICS_DAYS = 90;
export const DEFAULT_ANALYTICS_DAYS = 30;

export const analyticsQuerySchema = z.object({
  days: queryInteger('days', 1, MAX_ANALYTICS_DAYS, DEFAULT_ANALYTICS_DAYS),
  projectId: projectFilter,
});

const count = (description: string) => z.number().int().meta({ description });
const percent = (description: string) =>
  z.number().meta({ description: `${description}, in percent, one decimal, 0 when the denominator is 0.` });

export const periodSchema = z
  .object({
    days: z.number().int().meta({ description: 'Length of the period in UTC days (today included).' }),
    since: z.string().meta({ description: '00:00:00.000Z of the first day (today − days + 1).' }),
    until: z.string().meta({ description: 'The time of the request.' }),
  })
  .meta({ description: 'The period, UTC.' });

export const totalsSchema = z.object({
  total: count('Emails queued in the period.'),
  sent: count('Emails with status SENT or DELIVERED.'),
  opened: count('Emails opened at least once.'),
  clicked: count('Emails clicked at least once.'),
  bounced: count('Emails with status BOUNCED.'),
  complained: count('Emails with at least one complaint.'),
  failed: count('Emails with status FAILED.'),
  machineOpened: count(
    'Emails opened by a machine at least once (Apple Mail Privacy Protection, security scanners; SPEC §21): never in `opened` nor `openRate`.',
  ),
});

export const ratesSchema = z.object({
  openRate: percent('opened / sent'),
  clickRate: percent('clicked / sent'),
  bounceRate: percent('bounced / total'),
  complaintRate: percent('complained / sent'),
});

export const summaryResponseSchema = z
  .object({ period: periodSchema, totals: totalsSchema, rates: ratesSchema })
  .meta({
    description: 'Totals and rates over the period.',
    headers: asOfHeaderDoc,
    examples: [
      {
        period: { days: 7, since: '2026-06-09T00:00:00.000Z', until: '2026-06-15T12:00:00.000Z' },
        totals: {
          total: 120,
          sent: 100,
          opened: 45,
          clicked: 12,
          bounced: 4,
          complained: 1,
          failed: 3,
          machineOpened: 30,
        },
        rates: { openRate: 45, clickRate: 12, bounceRate: 3.3, complaintRate: 1 },
      },
    ],
  });

export const dailyBucketSchema = z.object({
  date: z.string().meta({ description: 'UTC date, YYYY-MM-DD.' }),
  sent: count('Emails created that day with status SENT or DELIVERED.'),
  opened: count('Emails created that day and opened at least once.'),
  clicked: count('Emails created that day and clicked at least once.'),
  bounced: count('Emails created that day with status BOUNCED.'),
});

export const dailyResponseSchema = z
  .object({
    days: z.number().int().meta({ description: 'Number of buckets.' }),
    daily: z
      .array(dailyBucketSchema)
      .meta({ description: 'Exactly `days` buckets, oldest first, zero-filled.' }),
  })
  .meta({
    description: 'One bucket per UTC day of the period, by the day emails were created.',
    headers: asOfHeaderDoc,
    examples: [
      {
        days: 2,
        daily: [
          { date: '2026-06-14', sent: 40, opened: 18, clicked: 5, bounced: 1 },
          { date: '2026-06-15', sent: 0, opened: 0, clicked: 0, bounced: 0 },
        ],
      },
    ],
  });

export const topTemplateSchema = z.object({
  id: z.string().meta({ description: 'Template id.' }),
  name: z.string().meta({ description: 'Template name; the id when the template is unknown.' }),
  subject: z.string().meta({ description: 'Template subject; empty when the template is unknown.' }),
  sent: count('Emails of the template with status SENT or DELIVERED.'),
  opened: count('Emails of the template opened at least once.'),
  clicked: count('Emails of the template clicked at least once.'),
});

export const topTemplatesResponseSchema = z
  .object({
    top: z.array(topTemplateSchema).meta({ description: 'At most 10, by sent desc, then id asc.' }),
  })
  .meta({
    description: 'The templates of the period with the most sent emails.',
    headers: asOfHeaderDoc,
    examples: [
      {
        top: [
          { id: 'welcome', name: 'Welcome', subject: 'Welcome to Acme', sent: 80, opened: 40, clicked: 10 },
          { id: 'tpl_unknown', name: 'tpl_unknown', subject: '', sent: 20, opened: 5, clicked: 2 },
        ],
      },
    ],
  });
