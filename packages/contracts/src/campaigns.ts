import { z } from 'zod';
import { audienceNameSchema, existingContactEmailSchema } from './contacts.js';

/**
 * Campaigns and sequences (SPEC §15): the bodies of `/campaigns` and `/sequences` (their answers
 * are in `campaign-responses.ts`). Content is either a template of the tenant (`templateId`,
 * rendered per recipient with the contact's `email`, `firstName`, `lastName` and attributes) or
 * its own `subject` + `html`/`text`.
 */

export const MAX_CONTENT_PART = 256 * 1024;
export const MAX_SEQUENCE_STEPS = 20;
/** A delay of at most one year between two steps. */
export const MAX_DELAY_MINUTES = 525_600;

const name = z
  .string({ error: 'name must be a string of 1 to 100 characters' })
  .min(1, { error: 'name must be a string of 1 to 100 characters' })
  .max(100, { error: 'name must be a string of 1 to 100 characters' })
  .meta({ description: 'Display name.', example: 'June newsletter' });

/** `addr` or `Name <addr>` (the sender of every email). */
const FROM_PATTERN = /^(?:[^<>\r\n]{0,200}<[^\s<>@]+@[^\s<>@]+\.[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+\.[^\s<>@]+)$/;
export const fromAddressSchema = z
  .string({ error: 'from must be an address or `Name <address>`' })
  .max(320, { error: 'from must be at most 320 characters' })
  .regex(FROM_PATTERN, { error: 'from must be an address or `Name <address>`' })
  .meta({ description: 'Sender: `addr` or `Name <addr>`.', example: 'Acme <news@acme.test>' });

const templateId = z
  .string({ error: 'templateId must be a string' })
  .min(1, { error: 'templateId must be a template id' })
  .max(128, { error: 'templateId must be a template id' })
  .meta({
    description: 'A template of the tenant; rendered per contact.',
    example: 'tpl_4Hs9dK2mQ7wE1rT6yU3iO8pA',
  });

const subject = z
  .string({ error: 'subject must be a string of 1 to 998 characters' })
  .min(1, { error: 'subject must be a string of 1 to 998 characters' })
  .max(998, { error: 'subject must be a string of 1 to 998 characters' })
  .meta({ description: 'Subject (overrides the template’s); Mustache.', example: 'News for {{firstName}}' });

const part = (field: 'html' | 'text', example: string) =>
  z
    .string({ error: `${field} must be a string` })
    .max(MAX_CONTENT_PART, { error: `${field} must be at most ${MAX_CONTENT_PART} characters` })
    .meta({ description: `${field === 'html' ? 'HTML' : 'Plain-text'} body; Mustache.`, example });

const content = {
  templateId: templateId.optional(),
  subject: subject.optional(),
  html: part('html', '<p>Hi {{firstName}}</p>').optional(),
  text: part('text', 'Hi {{firstName}}').optional(),
};

interface ContentFields {
  templateId?: string | undefined;
  subject?: string | undefined;
  html?: string | undefined;
  text?: string | undefined;
}

/** A template, or a subject with a body (SPEC §15: `templateId | (subject, html?, text?)`). */
export function contentProblem(c: ContentFields): { path: string; message: string } | null {
  if (c.templateId !== undefined) return null;
  if (c.subject === undefined) return { path: 'subject', message: 'subject is required without templateId' };
  if (c.html === undefined && c.text === undefined)
    return { path: 'html', message: 'html or text is required without templateId' };
  return null;
}

const scheduledAt = z.iso
  .datetime({ offset: true, error: 'scheduledAt must be an ISO 8601 date-time with offset' })
  .meta({ description: 'When to send (future, ≤ 30 days ahead).', example: '2026-06-20T09:00:00Z' });

/** SPEC §23: the campaign's pace; its emails fall due 60 000 / rate ms apart. */
export const MAX_SEND_RATE_PER_MINUTE = 1_000_000;
const sendRatePerMinute = z
  .number({ error: `sendRatePerMinute must be an integer from 1 to ${MAX_SEND_RATE_PER_MINUTE}` })
  .int({ error: `sendRatePerMinute must be an integer from 1 to ${MAX_SEND_RATE_PER_MINUTE}` })
  .min(1, { error: `sendRatePerMinute must be an integer from 1 to ${MAX_SEND_RATE_PER_MINUTE}` })
  .max(MAX_SEND_RATE_PER_MINUTE, {
    error: `sendRatePerMinute must be an integer from 1 to ${MAX_SEND_RATE_PER_MINUTE}`,
  })
  .meta({
    description:
      'Emails of this campaign handed to the provider per minute at most (SPEC §23); absent or null: as fast ' +
      'as the tenant’s send rate allows.',
    example: 600,
  });

const resourceRef = (field: string, description: string, example: string) =>
  z
    .string({ error: `${field} must be a ${field} id` })
    .min(1, { error: `${field} must be a ${field} id` })
    .max(128, { error: `${field} must be a ${field} id` })
    .meta({ description, example });
const segment = resourceRef(
  'segment',
  'A segment of the tenant (SPEC §27) instead of `audience`: its filter is evaluated once, when the campaign starts sending.',
  'seg_3WzN8kQ1vYp0aB7cD9eF2gH4',
);
const topic = resourceRef(
  'topic',
  'A topic of the tenant (SPEC §27): only the contacts subscribed to it (their choice, else its default) get the mail.',
  'top_3WzN8kQ1vYp0aB7cD9eF2gH4',
);

export { topic as topicRefSchema };

export const createCampaignBodySchema = z
  .strictObject({
    name,
    from: fromAddressSchema,
    audience: audienceNameSchema.optional(),
    segment: segment.optional(),
    topic: topic.optional(),
    ...content,
    scheduledAt: scheduledAt.optional(),
    sendRatePerMinute: sendRatePerMinute.nullable().optional(),
  })
  .superRefine((body, ctx) => {
    const problem = contentProblem(body);
    if (problem) ctx.addIssue({ code: 'custom', path: [problem.path], message: problem.message });
    if ((body.audience === undefined) === (body.segment === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['audience'],
        message: 'give exactly one of audience and segment',
      });
  })
  .meta({
    examples: [
      {
        name: 'June newsletter',
        from: 'Acme <news@acme.test>',
        audience: 'newsletter',
        subject: 'June news for {{firstName}}',
        html: '<p>Hi {{firstName}}, here is what is new.</p>',
      },
    ],
  });
export type CreateCampaignBody = z.infer<typeof createCampaignBodySchema>;

export const updateCampaignBodySchema = z
  .strictObject({
    name: name.optional(),
    from: fromAddressSchema.optional(),
    audience: audienceNameSchema.optional(),
    segment: segment.optional(),
    topic: topic.nullable().optional(),
    templateId: templateId.nullable().optional(),
    subject: subject.nullable().optional(),
    html: part('html', '<p>Hi {{firstName}}</p>').nullable().optional(),
    text: part('text', 'Hi {{firstName}}').nullable().optional(),
    scheduledAt: scheduledAt.nullable().optional(),
    sendRatePerMinute: sendRatePerMinute.nullable().optional(),
  })
  .refine((b) => b.audience === undefined || b.segment === undefined, {
    error: 'give audience or segment, not both',
    path: ['segment'],
  })
  .meta({
    description:
      'Fields to change (null clears an optional one); the result must still have content. `audience` and `segment` replace each other.',
    examples: [{ subject: 'June news, revised', scheduledAt: '2026-06-20T09:00:00Z' }],
  });
export type UpdateCampaignBody = z.infer<typeof updateCampaignBodySchema>;

// ---- sequences -------------------------------------------------------------------------------

export const sequenceStepBodySchema = z
  .strictObject({
    delayMinutes: z
      .number({ error: 'delayMinutes must be an integer from 0 to 525600' })
      .int({ error: 'delayMinutes must be an integer from 0 to 525600' })
      .min(0, { error: 'delayMinutes must be an integer from 0 to 525600' })
      .max(MAX_DELAY_MINUTES, { error: 'delayMinutes must be an integer from 0 to 525600' })
      .meta({ description: 'Minutes after the previous step (after enrollment for the first).', example: 0 }),
    ...content,
  })
  .superRefine((step, ctx) => {
    const problem = contentProblem(step);
    if (problem) ctx.addIssue({ code: 'custom', path: [problem.path], message: problem.message });
  });
export type SequenceStepBody = z.infer<typeof sequenceStepBodySchema>;

const STEPS_MESSAGE = 'steps must be an array of 1 to 20 steps';
const sequenceStepsSchema = z
  .array(sequenceStepBodySchema, { error: STEPS_MESSAGE })
  .min(1, { error: STEPS_MESSAGE })
  .max(MAX_SEQUENCE_STEPS, { error: STEPS_MESSAGE });

/** The steps of the sequences' examples: a welcome, then tips `laterMinutes` after it. */
const exampleSteps = (laterMinutes: number) => [
  { delayMinutes: 0, subject: 'Welcome, {{firstName}}', text: 'Glad to have you.' },
  { delayMinutes: laterMinutes, subject: 'Getting started', html: '<p>Three tips…</p>' },
];

export const createSequenceBodySchema = z
  .strictObject({
    name,
    from: fromAddressSchema,
    topic: topic.optional(),
    steps: sequenceStepsSchema,
  })
  .meta({
    examples: [{ name: 'Onboarding', from: 'Acme <hello@acme.test>', steps: exampleSteps(1440) }],
  });
export type CreateSequenceBody = z.infer<typeof createSequenceBodySchema>;

/**
 * `PATCH /sequences/:id`: the fields to change; `steps` replaces the whole list. Enrollments keep
 * their place (the index of their next step) and its due time.
 */
export const updateSequenceBodySchema = z
  .strictObject({
    name: name.optional(),
    from: fromAddressSchema.optional(),
    topic: topic.nullable().optional(),
    steps: sequenceStepsSchema.optional(),
  })
  .refine(
    (b) => b.name !== undefined || b.from !== undefined || b.steps !== undefined || b.topic !== undefined,
    {
      error: 'name, from, topic or steps is required',
    },
  )
  .meta({ examples: [{ steps: exampleSteps(2880) }] });
export type UpdateSequenceBody = z.infer<typeof updateSequenceBodySchema>;

export const enrollBodySchema = z
  .strictObject({
    email: existingContactEmailSchema,
  })
  .meta({ examples: [{ email: 'ada@example.com' }] });
export type EnrollBody = z.infer<typeof enrollBodySchema>;
