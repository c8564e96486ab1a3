import { z } from 'zod';
import { idSchema } from './ids.js';

/**
 * Templates (SPEC §12): bodies and answers of `/templates`. Content is Mustache (rendered by
 * `renderTemplate` of `@tern/domain`): `{{name}}` is HTML-escaped in `html`, plain in `subject`
 * and `text`; a missing variable renders empty.
 */

/** Largest `html` or `text` of a template, in characters (SPEC §11 caps a send's content at 256 KiB). */
export const MAX_TEMPLATE_PART = 256 * 1024;

const name = z
  .string({ error: 'name must be a string of 1 to 100 characters' })
  .min(1, { error: 'name must be a string of 1 to 100 characters' })
  .max(100, { error: 'name must be a string of 1 to 100 characters' })
  .meta({ description: 'Display name (shown by top-templates).', example: 'Welcome' });

const subject = z
  .string({ error: 'subject must be a string of at most 998 characters' })
  .max(998, { error: 'subject must be a string of at most 998 characters' })
  .meta({ description: 'Subject line; Mustache, never HTML-escaped.', example: 'Welcome, {{firstName}}' });

const part = (field: 'html' | 'text', description: string, example: string) =>
  z
    .string({ error: `${field} must be a string or null` })
    .max(MAX_TEMPLATE_PART, { error: `${field} must be at most ${MAX_TEMPLATE_PART} characters` })
    .nullable()
    .optional()
    .meta({ description, example });

const content = {
  name,
  subject,
  html: part('html', 'HTML body; Mustache, `{{x}}` HTML-escaped, `{{{x}}}` raw.', '<p>Hi {{firstName}}</p>'),
  text: part('text', 'Plain-text body; Mustache, never escaped.', 'Hi {{firstName}}'),
};

/** At least one body: an email needs html or text (SPEC §11). */
const hasBody = (t: { html?: string | null | undefined; text?: string | null | undefined }) =>
  (t.html ?? null) !== null || (t.text ?? null) !== null;
const BODY_REQUIRED = { error: 'html or text is required', path: ['html'] };

export const createTemplateBodySchema = z
  .strictObject({
    id: idSchema('id').optional().meta({
      description:
        'Your own id (1..128 of `[A-Za-z0-9_.:-]`), e.g. the one your events already use. Default: `tpl_…`.',
      example: 'welcome',
    }),
    ...content,
  })
  .refine(hasBody, BODY_REQUIRED)
  .meta({
    examples: [
      {
        name: 'Welcome',
        subject: 'Welcome, {{firstName}}',
        html: '<p>Hi {{firstName}}</p>',
        text: 'Hi {{firstName}}',
      },
    ],
  });
export type CreateTemplateBody = z.infer<typeof createTemplateBodySchema>;

export const replaceTemplateBodySchema = z
  .strictObject(content)
  .refine(hasBody, BODY_REQUIRED)
  .meta({
    examples: [
      {
        name: 'Welcome v2',
        subject: 'Welcome aboard, {{firstName}}',
        html: '<p>Hello {{firstName}}</p>',
        text: null,
      },
    ],
  });
export type ReplaceTemplateBody = z.infer<typeof replaceTemplateBodySchema>;

const templateSummaryFields = {
  id: z.string().meta({ description: 'Template id (`tpl_…` or the id chosen at creation).' }),
  name: z.string(),
  subject: z.string(),
  createdAt: z.string().meta({ description: 'ISO 8601.' }),
  updatedAt: z.string().meta({ description: 'ISO 8601; the last replace.' }),
};

export const templateSchema = z
  .object({ ...templateSummaryFields, html: z.string().nullable(), text: z.string().nullable() })
  .meta({
    description: 'A template with its content.',
    examples: [
      {
        id: 'tpl_8Zc1qW4rT7yU2iO5pA3sD6fG',
        name: 'Welcome',
        subject: 'Welcome, {{firstName}}',
        html: '<p>Hi {{firstName}}</p>',
        text: 'Hi {{firstName}}',
        createdAt: '2026-06-15T12:00:00.000Z',
        updatedAt: '2026-06-15T12:00:00.000Z',
      },
    ],
  });
export type Template = z.infer<typeof templateSchema>;

/** A list entry: no content (lists stay small; `GET /templates/:id` has it). */
export const templateSummarySchema = z.object(templateSummaryFields);
export type TemplateSummary = z.infer<typeof templateSummarySchema>;

export const renderTemplateBodySchema = z
  .strictObject({
    variables: z
      .record(z.string(), z.unknown(), { error: 'variables must be an object' })
      .optional()
      .meta({
        description: 'Values for the template’s `{{names}}`; missing ones render empty.',
        example: { firstName: 'Ada' },
      }),
  })
  .meta({ examples: [{ variables: { firstName: 'Ada' } }] });

export const renderedTemplateSchema = z
  .object({ subject: z.string(), html: z.string().nullable(), text: z.string().nullable() })
  .meta({
    description: 'The template rendered with the variables, as the sender would send it.',
    examples: [{ subject: 'Welcome, Ada', html: '<p>Hi Ada</p>', text: 'Hi Ada' }],
  });
