import { z } from 'zod';
import { nullableString } from './resources.js';

/**
 * Campaigns and sequences (SPEC §15): the answers of `/campaigns` and `/sequences` — a campaign, a
 * sequence, an enrollment and their counts. The bodies are in `campaigns.ts`.
 */

export const CAMPAIGN_STATUSES = ['draft', 'scheduled', 'sending', 'sent', 'cancelled'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

/** The example counts of the documentation (a mail to three contacts). */
const EXAMPLE_STATS = {
  recipients: 3,
  sent: 3,
  delivered: 2,
  opened: 1,
  clicked: 1,
  bounced: 1,
  complained: 0,
  unsubscribed: 0,
  failed: 0,
};

export const mailStatsSchema = z
  .object({
    recipients: z.number().int().meta({ description: 'Emails created for this mail (one per contact).' }),
    sent: z
      .number()
      .int()
      .meta({ description: 'Handed to the provider (SENT, DELAYED, DELIVERED, BOUNCED).' }),
    delivered: z.number().int(),
    opened: z.number().int().meta({ description: 'Emails opened at least once (bots excluded).' }),
    clicked: z.number().int().meta({ description: 'Emails clicked at least once (bots excluded).' }),
    bounced: z.number().int(),
    complained: z.number().int(),
    unsubscribed: z.number().int().meta({ description: 'Recipients who unsubscribed through this mail.' }),
    failed: z.number().int().meta({
      description:
        'Recipients skipped because their message could not be composed (over a limit of `POST /emails/send`); nothing was sent to them. Not in `recipients`.',
    }),
  })
  .meta({
    description: 'Counts from the projection (exact; they follow the log within a batch).',
    example: EXAMPLE_STATS,
  });
export type MailStats = z.infer<typeof mailStatsSchema>;

export const campaignSchema = z
  .object({
    id: z.string().meta({ description: 'Campaign id, `cmp_…`.' }),
    name: z.string(),
    from: z.string(),
    audience: nullableString('The audience, or null when `segment` is given.'),
    segment: nullableString('The segment (SPEC §27) instead of an audience, or null.'),
    topic: nullableString('The topic whose subscribers only get it, or null.'),
    templateId: z.string().nullable(),
    subject: z.string().nullable(),
    html: z.string().nullable(),
    text: z.string().nullable(),
    status: z
      .enum(CAMPAIGN_STATUSES)
      .meta({ description: 'draft → scheduled → sending → sent, or cancelled.' }),
    scheduledAt: nullableString('ISO 8601, or null.'),
    sentAt: nullableString('When the fan-out finished (ISO 8601), or null.'),
    sendRatePerMinute: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The campaign’s pace in emails per minute, or null (unpaced).' }),
    createdAt: z.string().meta({ description: 'ISO 8601.' }),
    updatedAt: z.string().meta({ description: 'ISO 8601.' }),
    stats: mailStatsSchema,
  })
  .meta({
    description: 'A campaign and its counts.',
    examples: [
      {
        id: 'cmp_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        name: 'June newsletter',
        from: 'Acme <news@acme.test>',
        audience: 'newsletter',
        segment: null,
        topic: null,
        templateId: null,
        subject: 'June news for {{firstName}}',
        html: '<p>Hi {{firstName}}, here is what is new.</p>',
        text: null,
        status: 'sent',
        scheduledAt: null,
        sentAt: '2026-06-15T12:00:02.000Z',
        sendRatePerMinute: null,
        createdAt: '2026-06-15T11:58:00.000Z',
        updatedAt: '2026-06-15T12:00:02.000Z',
        stats: EXAMPLE_STATS,
      },
    ],
  });
export type Campaign = z.infer<typeof campaignSchema>;

export const campaignStatusAnswerSchema = z
  .object({ id: z.string(), status: z.enum(CAMPAIGN_STATUSES) })
  .meta({ examples: [{ id: 'cmp_4Hs9dK2mQ7wE1rT6yU3iO8pA', status: 'sending' }] });

/**
 * `GET /campaigns/:id/daily`: the campaign's emails per UTC day of what happened to them. Each
 * email counts once per kind, on the day of its first such event (a human open or click: bots are
 * left out, as in `stats`), so over a period that holds the whole campaign the buckets add up to
 * `stats.delivered`, `opened`, `clicked` and `bounced`; `sent` counts `email.sent` events (an email
 * still DELAYED at its first attempt has none yet).
 */
export const campaignDailySchema = z
  .object({
    days: z.number().int(),
    daily: z.array(
      z.object({
        date: z.string().meta({ description: 'UTC date, `YYYY-MM-DD`.' }),
        sent: z.number().int(),
        delivered: z.number().int(),
        opened: z.number().int(),
        clicked: z.number().int(),
        bounced: z.number().int(),
      }),
    ),
  })
  .meta({
    description: 'Exactly `days` buckets, oldest first, zero-filled, ending today (UTC).',
    examples: [
      {
        days: 2,
        daily: [
          { date: '2026-06-14', sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0 },
          { date: '2026-06-15', sent: 3, delivered: 2, opened: 1, clicked: 1, bounced: 1 },
        ],
      },
    ],
  });
export type CampaignDaily = z.infer<typeof campaignDailySchema>;

// ---- sequences -------------------------------------------------------------------------------

export const sequenceSchema = z
  .object({
    id: z.string().meta({ description: 'Sequence id, `seq_…`.' }),
    name: z.string(),
    from: z.string(),
    topic: nullableString('The topic whose subscribers only get its steps, or null.'),
    steps: z.array(
      z.object({
        delayMinutes: z.number().int(),
        templateId: z.string().nullable(),
        subject: z.string().nullable(),
        html: z.string().nullable(),
        text: z.string().nullable(),
        stats: mailStatsSchema,
      }),
    ),
    enrollments: z
      .object({
        active: z.number().int(),
        completed: z.number().int(),
        stopped: z.number().int(),
        cancelled: z.number().int(),
      })
      .meta({ description: 'Enrollments by state.' }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({
    description: 'A sequence, its steps with per-step counts, and its enrollments by state.',
    examples: [
      {
        id: 'seq_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        name: 'Onboarding',
        from: 'Acme <hello@acme.test>',
        topic: null,
        steps: [
          {
            delayMinutes: 0,
            templateId: null,
            subject: 'Welcome, {{firstName}}',
            html: null,
            text: 'Glad to have you.',
            stats: EXAMPLE_STATS,
          },
        ],
        enrollments: { active: 1, completed: 2, stopped: 0, cancelled: 0 },
        createdAt: '2026-06-15T12:00:00.000Z',
        updatedAt: '2026-06-15T12:00:00.000Z',
      },
    ],
  });
export type Sequence = z.infer<typeof sequenceSchema>;

export const ENROLLMENT_STATES = ['active', 'completed', 'stopped', 'cancelled'] as const;
export type EnrollmentState = (typeof ENROLLMENT_STATES)[number];
export const enrollmentSchema = z
  .object({
    id: z.string().meta({ description: 'Enrollment id, `enr_…`.' }),
    sequenceId: z.string(),
    contactId: z.string(),
    email: nullableString('The contact’s address; null once the contact is deleted or erased.'),
    state: z.enum(ENROLLMENT_STATES),
    stopReason: nullableString('unsubscribed | suppressed | erased, when stopped.'),
    nextStep: z.number().int().meta({ description: 'Index (0-based) of the next step to send.' }),
    nextDueAt: nullableString('When the next step falls due (ISO 8601).'),
    enrolledAt: z.string(),
  })
  .meta({
    examples: [
      {
        id: 'enr_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        sequenceId: 'seq_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        contactId: 'ct_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        email: 'ada@example.com',
        state: 'active',
        stopReason: null,
        nextStep: 0,
        nextDueAt: '2026-06-15T12:00:00.000Z',
        enrolledAt: '2026-06-15T12:00:00.000Z',
      },
    ],
  });
export type Enrollment = z.infer<typeof enrollmentSchema>;
