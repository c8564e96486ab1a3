// The schemas the `/emails*` routes share: the body limits, the Idempotency-Key header, the send
// errors, and the reschedule body and answer.
import { ATTACHMENT_BODY_LIMIT } from '@tern/contracts';
import { z } from 'zod';
import { resourceErrors } from '../resource-kit.js';
import { errorResponse, errors } from '../schemas.js';

// Attachments (SPEC §22): a message may be 40 MB, so these routes (and their /compat/resend
// twins) take bodies up to that plus the JSON around it; every other route keeps Fastify's 1 MiB.
export const SEND_BODY_LIMIT = ATTACHMENT_BODY_LIMIT;
export const BATCH_BODY_LIMIT = ATTACHMENT_BODY_LIMIT;

export const idempotencyHeader = z.object({
  'idempotency-key': z
    .string()
    .optional()
    .meta({
      description:
        '1..256 characters. The same key with the same body within 24 h answers the first response again and ' +
        'sends nothing new; with another body → 409. Per tenant and project: keys bound to different projects ' +
        'never share one.',
    }),
});

export const sendErrors = {
  400: errorResponse(
    400,
    'Invalid request: the message names the field. In production with a real provider, a `from` whose domain is not ' +
      'verified (SPEC §20) → `code: DOMAIN_NOT_VERIFIED` naming the domain; nothing is queued.',
    'body.to: to must be an email address',
  ),
  ...resourceErrors('email'),
  404: errorResponse(
    404,
    'A key bound to a project named another project in `projectId` (SPEC §16).',
    'body.projectId: Project not found',
  ),
  409: errors.conflict,
  413: errorResponse(
    413,
    'The message is larger than 40 MB (attachments counted as base64, SPEC §22; the message gives its size); a request body ' +
      'past the route’s limit (40 MB plus 2 MiB of JSON) is refused before it is read. `code: PAYLOAD_TOO_LARGE`; nothing is queued.',
    'body.attachments: the message must be at most 41943040 bytes (got 42991616)',
  ),
  503: errors.unavailable,
};

/** `PATCH /emails/:id`: the new time of a scheduled email. */
export const rescheduleBodySchema = z
  .strictObject({
    scheduledAt: z.iso.datetime({ offset: true, error: 'scheduledAt must be an ISO 8601 timestamp' }),
  })
  .meta({ examples: [{ scheduledAt: '2026-06-16T09:00:00.000Z' }] });

export const rescheduleResponses = {
  200: z.object({ id: z.string(), scheduledAt: z.string() }).meta({
    description: 'Rescheduled: it goes out at `scheduledAt`.',
    examples: [{ id: 'em_3kT9qLm2ZxV7bN4cR8sW1yPd', scheduledAt: '2026-06-16T09:00:00.000Z' }],
  }),
  400: errorResponse(
    400,
    'Invalid request: the message names the field.',
    'body.scheduledAt: scheduledAt must be in the future',
  ),
  ...resourceErrors('email'),
  404: errors.notFound,
  409: errors.conflict,
};
