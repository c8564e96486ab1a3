import { z } from 'zod';

/** Suppressions (SPEC §13): addresses never handed to a provider (SPEC §11). */

export const SUPPRESSION_SOURCES = ['manual', 'bounce', 'complaint', 'unsubscribe'] as const;
export type SuppressionSource = (typeof SUPPRESSION_SOURCES)[number];

/** Reasons the projection writes on its own. */
export const AUTOMATIC_SUPPRESSION_REASONS = {
  bounce: 'hard_bounce',
  /** Three soft bounces of one address within 7 days (SPEC §21). */
  softBounce: 'soft_bounce',
  complaint: 'complaint',
  unsubscribe: 'unsubscribed',
} as const;

export const addSuppressionBodySchema = z
  .strictObject({
    email: z
      .email({ error: 'email must be an email address' })
      .max(320, { error: 'email must be at most 320 characters' })
      .meta({ description: 'The address; stored and compared lowercased.', example: 'ada@example.com' }),
    reason: z
      .string({ error: 'reason must be a string of 1 to 500 characters' })
      .min(1, { error: 'reason must be a string of 1 to 500 characters' })
      .max(500, { error: 'reason must be a string of 1 to 500 characters' })
      .optional()
      .meta({ description: 'Why (free text).', example: 'asked by phone' }),
  })
  .meta({ examples: [{ email: 'ada@example.com', reason: 'asked by phone' }] });
export type AddSuppressionBody = z.infer<typeof addSuppressionBodySchema>;

export const suppressionSchema = z
  .object({
    email: z.string().meta({ description: 'Lowercased address.' }),
    reason: z.string().nullable().meta({
      description: 'Free text, or `hard_bounce` / `complaint` / `unsubscribed` when added automatically.',
    }),
    source: z
      .enum(SUPPRESSION_SOURCES)
      .meta({ description: 'Who added it: you (`manual`), or the projection.' }),
    createdAt: z.string().meta({ description: 'ISO 8601.' }),
  })
  .meta({
    description: 'A suppressed address.',
    examples: [
      {
        email: 'ada@example.com',
        reason: 'hard_bounce',
        source: 'bounce',
        createdAt: '2026-06-15T12:00:00.000Z',
      },
    ],
  });
export type Suppression = z.infer<typeof suppressionSchema>;
