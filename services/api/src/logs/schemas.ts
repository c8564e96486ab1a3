import { emailLogEntrySchema, emailStatusSchema, logsPageMetaSchema } from '@tern/contracts';
import { z } from 'zod';
import { asOfHeaderDoc, pageQuerySchema, projectFilter } from '../schemas.js';
import { encodeLogsCursor } from './cursor.js';

/** Schemas of `GET /emails/logs` and `/tenants/:id/logs` (SPEC §7): requests, responses and their OpenAPI. */

/** A bounded query-string text whose 400 names the field. */
const queryText = (field: string, max: number, description: string, example: string) =>
  z
    .string({ error: `${field} must be a string of 1 to ${max} characters` })
    .min(1, { error: `${field} must be a string of 1 to ${max} characters` })
    .max(max, { error: `${field} must be a string of 1 to ${max} characters` })
    .optional()
    .meta({ description, example });

const queryTimestamp = (field: string, description: string, example: string) =>
  z.iso
    .datetime({ offset: true, error: `${field} must be an ISO 8601 timestamp` })
    .optional()
    .meta({ description, example });

/** A `meta.nextCursor` as this server issues it: the page after the example page below. */
const CURSOR_EXAMPLE = encodeLogsCursor({ createdAt: '2026-06-15T11:59:00.000000', id: 'em_01', page: 2 });

export const logsQuerySchema = pageQuerySchema
  .extend({
    status: z
      .string({ error: `status must be one of ${emailStatusSchema.options.join(', ')}` })
      .transform((s) => s.toUpperCase())
      .pipe(
        z.enum(emailStatusSchema.options, {
          error: `status must be one of ${emailStatusSchema.options.join(', ')}`,
        }),
      )
      .optional()
      .meta({
        type: 'string',
        enum: emailStatusSchema.options,
        description: 'Only entries with this status (any case).',
        example: 'DELIVERED',
      }),
    from: queryTimestamp(
      'from',
      'Only entries with `createdAt` ≥ this ISO 8601 time.',
      '2026-06-01T00:00:00Z',
    ),
    to: queryTimestamp('to', 'Only entries with `createdAt` ≤ this ISO 8601 time.', '2026-06-15T23:59:59Z'),
    tag: queryText('tag', 256, 'Only entries whose `tags` include this tag (exact).', 'receipt'),
    q: queryText(
      'q',
      320,
      'Recipient address, exact or prefix, case-insensitive (`ada@` finds `Ada@example.com`).',
      'ada@',
    ),
    projectId: projectFilter,
    templateId: queryText(
      'templateId',
      256,
      'Only the emails rendered from this template (its id, as `GET /templates` lists it).',
      'tpl_8Kd2mQ7wE1rT6yU3iO9pAs4L',
    ),
    cursor: queryText(
      'cursor',
      512,
      'Opaque position from `meta.nextCursor`: the next page at constant cost. Send the same filters; `page` is then ignored.',
      CURSOR_EXAMPLE,
    ),
  })
  .refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) <= Date.parse(q.to), {
    error: 'from must not be after to',
    path: ['from'],
  });

export const logsResponseSchema = z
  .object({ data: z.array(emailLogEntrySchema), meta: logsPageMetaSchema })
  .meta({
    description: 'One page of the delivery log, newest first.',
    headers: asOfHeaderDoc,
    examples: [
      {
        data: [
          {
            id: 'em_01',
            toEmail: 'ada@example.com',
            subject: 'Your receipt',
            status: 'DELIVERED',
            provider: 'ses',
            messageId: '0100018f-abc',
            createdAt: '2026-06-15T11:59:00.000Z',
            tags: ['receipt'],
            opened: true,
            clicked: false,
            complained: false,
          },
        ],
        // `?status=delivered&tag=receipt&limit=1`: more pages follow, so a cursor to the next one.
        meta: { page: 1, limit: 1, total: 1342, totalPages: 1342, nextCursor: CURSOR_EXAMPLE },
      },
    ],
  });
