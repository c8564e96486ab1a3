import {
  ATTACHMENT_BODY_LIMIT,
  batchEmailBodySchema,
  batchEmailResponseSchema,
  cancelEmailResponseSchema,
  emailContentSchema,
  emailDetailSchema,
  MAX_MESSAGE_BYTES,
  MAX_SCHEDULE_AHEAD_MS,
  messageBytes,
  normalizeSendBody,
  type SendEmailBody,
  sendEmailBodySchema,
  sendEmailResponseSchema,
} from '@tern/contracts';
import { cancelledEvent, cutSubject, renderTemplate, retentionCutoff } from '@tern/domain';
import { EventLogUnavailableError } from '@tern/event-log';
import { HttpError, httpError } from '@tern/http';
import { decodeAttachments, enqueueSends, type NewSend, type StoredMessage } from '@tern/sending';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { boundProject, type Credential, credentialOf } from '../credentials.js';
import { assertFromVerified } from '../domains/policy.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { newResourceId, notFound, resourceErrors, resourceIdParam } from '../resource-kit.js';
import type { ApiRouteDeps, SendingDeps } from '../route-deps.js';
import { errorResponse, errors } from '../schemas.js';
import { getTemplate } from '../templates/store.js';
import { claimKey, idempotencyKeyOf, releaseKey, requestHash, storeAnswer } from './idempotency.js';
import {
  cancelOutgoing,
  emailDetail,
  emailProject,
  markCancelled,
  rescheduleOutgoing,
  sandboxContent,
} from './store.js';

// Attachments (SPEC §22): a message may be 40 MB, so these routes (and their /compat/resend
// twins) take bodies up to that plus the JSON around it; every other route keeps Fastify's 1 MiB.
export const SEND_BODY_LIMIT = ATTACHMENT_BODY_LIMIT;
export const BATCH_BODY_LIMIT = ATTACHMENT_BODY_LIMIT;

const idempotencyHeader = z.object({
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

const sendErrors = {
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

/**
 * The part of a body that is the message (scheduling and project live in their own columns), and
 * its attachments' bytes apart: the message keeps only their description.
 */
function storedMessage(body: SendEmailBody): { message: StoredMessage; files?: NewSend['files'] } {
  const { scheduledAt: _s, projectId: _p, attachments, ...message } = normalizeSendBody(body);
  if (attachments === undefined || attachments.length === 0) return { message };
  const { files, meta } = decodeAttachments(attachments);
  return { message: { ...message, attachments: meta }, files };
}

/**
 * SPEC §22: each message at most 40 MB (attachments as base64 plus content) → 413
 * `PAYLOAD_TOO_LARGE` naming the messages past it; attachments need the keyring that seals them.
 */
function assertMessageSizes(
  bodies: readonly SendEmailBody[],
  prefix: (i: number) => string,
  sealable: boolean,
): void {
  const large = bodies.flatMap((b, i) => {
    const size = messageBytes(b);
    return size > MAX_MESSAGE_BYTES
      ? [`${prefix(i)}attachments: the message must be at most ${MAX_MESSAGE_BYTES} bytes (got ${size})`]
      : [];
  });
  if (large.length > 0) throw httpError(413, large.join('; '), { code: 'PAYLOAD_TOO_LARGE' });
  if (!sealable && bodies.some((b) => (b.attachments?.length ?? 0) > 0))
    throw httpError(503, 'attachments cannot be stored by this instance', { code: 'UNAVAILABLE' });
}

/**
 * `POST /emails/send|batch`, `GET /emails/:id`, `POST /emails/:id/cancel`, `GET /emails/:id/content`
 * (SPEC §11). A send writes its content to `outgoing_emails`, appends `email.queued`, and answers
 * 202 once the log has it; the sender does the rest.
 */
export const emailRoutes: FastifyPluginAsyncZod<ApiRouteDeps & { sending: SendingDeps }> = async (
  app,
  deps,
) => {
  const { sending } = deps;

  /**
   * The project of each send (SPEC §16): a project-bound key sends within its project only; the
   * body may name it or leave it out, and naming another project → 404 (that project does not
   * exist for this key), nothing queued.
   */
  function withProject(
    credential: Credential,
    bodies: readonly SendEmailBody[],
    prefix: (i: number) => string,
  ): SendEmailBody[] {
    const bound = boundProject(credential);
    if (bound === null) return [...bodies];
    const foreign = bodies.flatMap((b, i) =>
      b.projectId !== undefined && b.projectId !== bound ? [`${prefix(i)}projectId: Project not found`] : [],
    );
    if (foreign.length > 0) throw httpError(404, foreign.join('; '), { code: 'NOT_FOUND' });
    return bodies.map((b) => ({ ...b, projectId: bound }));
  }

  /** Clock-dependent and cross-resource checks of a whole batch; throws one 400 naming every field. */
  async function prepare(tenantId: string, bodies: readonly SendEmailBody[], prefix: (i: number) => string) {
    const at = deps.now();
    const problems: string[] = [];
    const templateIds = [
      ...new Set(bodies.flatMap((b) => (b.templateId === undefined ? [] : [b.templateId]))),
    ];
    const templates = new Map(
      await Promise.all(
        templateIds.map(async (id) => [id, await getTemplate(deps.pool, tenantId, id)] as const),
      ),
    );
    const prepared = bodies.map((body, i) => {
      let scheduledAt: Date | null = null;
      if (body.scheduledAt !== undefined) {
        scheduledAt = new Date(body.scheduledAt);
        if (scheduledAt.getTime() <= at.getTime())
          problems.push(`${prefix(i)}scheduledAt: scheduledAt must be in the future`);
        else if (scheduledAt.getTime() > at.getTime() + MAX_SCHEDULE_AHEAD_MS)
          problems.push(`${prefix(i)}scheduledAt: scheduledAt must be at most 30 days ahead`);
      }
      let subject = body.subject ?? '';
      if (body.templateId !== undefined) {
        const template = templates.get(body.templateId);
        if (!template) problems.push(`${prefix(i)}templateId: template ${body.templateId} not found`);
        else
          subject = renderTemplate(
            { subject: body.subject ?? template.subject, html: template.html, text: template.text },
            body.variables ?? {},
          ).subject;
      }
      return { body, scheduledAt, subject: cutSubject(subject) };
    });
    if (problems.length > 0) throw httpError(400, problems.join('; '), { code: 'FST_ERR_VALIDATION' });
    const froms = bodies.map((b, i) => ({ field: `${prefix(i)}from`, from: b.from }));
    await assertFromVerified(deps.pool, deps.domainPolicy, tenantId, froms);
    return { at, prepared };
  }

  /** Writes the rows, appends every email.queued in one append; nothing is kept when the log refuses. */
  async function accept(
    credential: Credential,
    bodies: readonly SendEmailBody[],
    prefix: (i: number) => string,
  ) {
    const { tenantId } = credential;
    assertMessageSizes(bodies, prefix, sending.keyring !== undefined);
    const { at, prepared } = await prepare(tenantId, bodies, prefix);
    const sends: NewSend[] = prepared.map(({ body, scheduledAt, subject }) => ({
      id: newResourceId('email'),
      ...storedMessage(body),
      subject,
      templateId: body.templateId ?? null,
      dueAt: scheduledAt ?? at,
      scheduledAt,
      projectId: body.projectId ?? null,
    }));
    try {
      await enqueueSends(deps.pool, sending.log, tenantId, sends, at, sending.keyring);
    } catch (error) {
      if (error instanceof EventLogUnavailableError) {
        throw httpError(
          503,
          'Event log unavailable: nothing was queued, retry later',
          { code: 'LOG_UNAVAILABLE' },
          {
            'retry-after': '5',
          },
        );
      }
      throw error;
    }
    return sends.map((s) => s.id);
  }

  /**
   * False when a project-bound key asks about an email outside its project (or one without a
   * project): such an email does not exist for it (404, SPEC §16).
   */
  /** The tenant's retention cut-off now (SPEC §9): an email created before it is not found. */
  async function cutoffOf(tenantId: string): Promise<Date> {
    const context = await deps.readModel.get(tenantId);
    return retentionCutoff(deps.now(), context.retentionOverride ?? deps.retentionDays);
  }

  async function visible(credential: Credential, id: string): Promise<boolean> {
    const bound = boundProject(credential);
    if (bound === null) return true;
    return (await emailProject(deps.pool, credential.tenantId, id)) === bound;
  }

  /**
   * Runs `produce` at most once per (tenant, project scope, Idempotency-Key) and body; replays its
   * answer. `sent` is the body with the project applied (`withProject`), so the hash says what
   * would be queued; the scope is the key's bound project (issue 24, item 6).
   */
  async function idempotent<T>(
    request: FastifyRequest,
    route: string,
    sent: unknown,
    produce: () => Promise<T>,
  ): Promise<{ statusCode: number; body: T }> {
    const credential = credentialOf(request);
    const { tenantId } = credential;
    const scope = boundProject(credential) ?? '';
    const key = idempotencyKeyOf(request.headers);
    if (key === undefined) return { statusCode: 202, body: await produce() };
    const claim = await claimKey(deps.pool, {
      tenantId,
      scope,
      key,
      route,
      hash: requestHash(route, sent),
      now: deps.now,
    });
    if (claim.kind === 'replay') return { statusCode: claim.answer.statusCode, body: claim.answer.body as T };
    try {
      const body = await produce();
      await storeAnswer(deps.pool, { tenantId, scope, key, answer: { statusCode: 202, body } });
      return { statusCode: 202, body };
    } catch (error) {
      await releaseKey(deps.pool, { tenantId, scope, key }).catch(() => undefined);
      throw error;
    }
  }

  app.post(
    '/emails/send',
    {
      // A 40 MB message with its attachments (SPEC §22); past the limit → 413 before parsing.
      bodyLimit: SEND_BODY_LIMIT,
      config: { auth: 'jwt_or_key', scope: 'email:send' },
      schema: {
        tags: [TAGS.emails],
        operationId: 'sendEmail',
        summary: 'Send an email',
        description:
          'Queues one email to one recipient and answers 202 `{ id }` once `email.queued` is in the event log. ' +
          'With `scheduledAt` (future, ≤ 30 days) it is SCHEDULED until then. API key with `email:send`, or a dashboard JWT. ' +
          'A key bound to a project sends into its project (`projectId` may be left out; another project → 404). ' +
          '`attachments: [{ filename, content, contentType?, contentId? }]` (SPEC §22): `content` is the file in standard ' +
          'base64, `contentType` defaults from the file name, `contentId` makes an inline part the HTML shows as ' +
          '`cid:<contentId>`; the whole message (attachments as base64, subject, html, text, headers) ≤ 40 MB, else 413.',
        security: KEY_OR_DASHBOARD,
        headers: idempotencyHeader,
        body: sendEmailBodySchema,
        response: { 202: sendEmailResponseSchema, ...sendErrors },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      const bodies = withProject(credential, [request.body], () => 'body.');
      const answer = await idempotent(request, 'send', bodies[0], async () => {
        const [id] = await accept(credential, bodies, () => 'body.');
        return { id: id! };
      });
      return reply.status(answer.statusCode).send(answer.body);
    },
  );

  app.post(
    '/emails/batch',
    {
      // The whole batch at most one largest message (SPEC §22); a larger request is a 413.
      bodyLimit: BATCH_BODY_LIMIT,
      config: { auth: 'jwt_or_key', scope: 'email:send' },
      schema: {
        tags: [TAGS.emails],
        operationId: 'sendEmailBatch',
        summary: 'Send a batch of emails',
        description:
          '1..100 send bodies, validated as a whole: any invalid one → 400 listing the indexes, nothing queued. ' +
          '202 `{ data: [{ id }] }` in input order. A key bound to a project: as for one send, and one email naming ' +
          'another project → 404, nothing queued.',
        security: KEY_OR_DASHBOARD,
        headers: idempotencyHeader,
        body: batchEmailBodySchema,
        response: { 202: batchEmailResponseSchema, ...sendErrors },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      const prefix = (i: number) => `body.${i}.`;
      const bodies = withProject(credential, request.body, prefix);
      const answer = await idempotent(request, 'batch', bodies, async () => {
        const ids = await accept(credential, bodies, prefix);
        return { data: ids.map((id) => ({ id })) };
      });
      return reply.status(answer.statusCode).send(answer.body);
    },
  );

  app.get(
    '/emails/:id',
    {
      config: { auth: 'jwt_or_key', scope: 'email:read' },
      schema: {
        tags: [TAGS.emails],
        operationId: 'getEmail',
        summary: 'Get an email and its timeline',
        description:
          'The log entry plus `from`, `cc`, `bcc`, `scheduledAt`, `projectId`, `opens`, `clicks` and `events` ' +
          '(the timeline, oldest first). An email accepted but not yet projected shows QUEUED or SCHEDULED with no events. ' +
          'An email created before the tenant’s retention cut-off → 404, as in the logs. ' +
          'A key bound to a project sees its project’s emails only (another → 404).',
        security: KEY_OR_DASHBOARD,
        params: resourceIdParam('email'),
        response: {
          200: emailDetailSchema,
          ...resourceErrors('email'),
          404: errors.notFound,
        },
      },
    },
    async (request) => {
      const credential = credentialOf(request);
      const detail = await emailDetail(
        deps.pool,
        credential.tenantId,
        request.params.id,
        await cutoffOf(credential.tenantId),
      );
      // A project-bound key sees the emails of its project only (SPEC §16).
      const bound = boundProject(credential);
      if (!detail || (bound !== null && detail.projectId !== bound)) throw notFound('Email');
      return detail;
    },
  );

  app.get(
    '/emails/:id/content',
    {
      config: { auth: 'jwt_or_key', scope: 'email:read' },
      schema: {
        tags: [TAGS.emails],
        operationId: 'getEmailContent',
        summary: 'Get the message the sandbox kept',
        description:
          'The message as the sandbox provider received it (rendered, tracking applied, with its Message-ID). ' +
          'Only the sandbox keeps messages; other emails → 404, and so are another project’s for a project-bound key ' +
          'and an email created before the tenant’s retention cut-off.',
        security: KEY_OR_DASHBOARD,
        params: resourceIdParam('email'),
        response: {
          200: emailContentSchema,
          ...resourceErrors('email'),
          404: errors.notFound,
        },
      },
    },
    async (request) => {
      const credential = credentialOf(request);
      if (!(await visible(credential, request.params.id))) throw notFound('Email content');
      const kept = await sandboxContent(
        deps.pool,
        credential.tenantId,
        request.params.id,
        await cutoffOf(credential.tenantId),
      );
      if (!kept) throw notFound('Email content');
      return {
        ...(kept.message as z.infer<typeof emailContentSchema>),
        id: request.params.id,
        sentAt: kept.createdAt.toISOString(),
      };
    },
  );

  app.post(
    '/emails/:id/cancel',
    {
      config: { auth: 'jwt_or_key', scope: 'email:read' },
      schema: {
        tags: [TAGS.emails],
        operationId: 'cancelEmail',
        summary: 'Cancel a scheduled email',
        description:
          'An email not yet handed to the provider (SCHEDULED, or QUEUED and not yet picked up) → 200 CANCELLED; it ' +
          'is never sent. Cancelling it again → 200. Already handed to the provider → 409. Scope `email:read`, as the seed says. ' +
          'Another project’s email, for a project-bound key → 404.',
        security: KEY_OR_DASHBOARD,
        params: resourceIdParam('email'),
        response: {
          200: cancelEmailResponseSchema,
          ...resourceErrors('email'),
          404: errors.notFound,
          409: errors.conflict,
        },
      },
    },
    async (request) => {
      const credential = credentialOf(request);
      const { tenantId } = credential;
      const { id } = request.params;
      if (!(await visible(credential, id))) throw notFound('Email');
      const at = deps.now();
      const outcome = await cancelOutgoing(deps.pool, tenantId, id, at);
      if (outcome === 'not_found') throw notFound('Email');
      if (outcome === 'handed') {
        throw httpError(409, 'The email was already handed to the provider; it can no longer be cancelled', {
          code: 'ALREADY_SENT',
        });
      }
      if (outcome === 'cancelled') {
        // The row already says cancelled (never sent); if this append fails the sender's sweep appends it.
        try {
          await sending.log.append([cancelledEvent(tenantId, id, at)]);
          await markCancelled(deps.pool, tenantId, id);
        } catch (error) {
          if (error instanceof HttpError) throw error;
          request.log.warn({ err: error }, 'email.cancelled not appended yet; the sender will');
        }
      }
      return { id, status: 'CANCELLED' as const };
    },
  );

  app.patch(
    '/emails/:id',
    {
      config: { auth: 'jwt_or_key', scope: 'email:send' },
      schema: {
        tags: [TAGS.emails],
        operationId: 'rescheduleEmail',
        summary: 'Reschedule a scheduled email',
        description:
          'Moves a SCHEDULED email not yet handed to the provider to `scheduledAt` (future, ≤ 30 days): it goes out ' +
          'then, and `GET /emails/:id` shows the new time (Resend’s update, SPEC §22). An email that is not waiting for ' +
          'its time (sent, cancelled, not scheduled) → 409 `ALREADY_SENT`. Another project’s email, for a project-bound key → 404.',
        security: KEY_OR_DASHBOARD,
        params: resourceIdParam('email'),
        body: z
          .strictObject({
            scheduledAt: z.iso.datetime({ offset: true, error: 'scheduledAt must be an ISO 8601 timestamp' }),
          })
          .meta({ examples: [{ scheduledAt: '2026-06-16T09:00:00.000Z' }] }),
        response: {
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
        },
      },
    },
    async (request) => {
      const credential = credentialOf(request);
      const { id } = request.params;
      if (!(await visible(credential, id))) throw notFound('Email');
      const at = new Date(request.body.scheduledAt);
      const current = deps.now();
      if (at.getTime() <= current.getTime())
        throw httpError(400, 'body.scheduledAt: scheduledAt must be in the future', {
          code: 'FST_ERR_VALIDATION',
        });
      if (at.getTime() > current.getTime() + MAX_SCHEDULE_AHEAD_MS)
        throw httpError(400, 'body.scheduledAt: scheduledAt must be at most 30 days ahead', {
          code: 'FST_ERR_VALIDATION',
        });
      const outcome = await rescheduleOutgoing(deps.pool, credential.tenantId, id, at, current);
      if (outcome === 'not_found') throw notFound('Email');
      if (outcome === 'handed')
        throw httpError(409, 'Only a scheduled email not yet handed to the provider can be rescheduled', {
          code: 'ALREADY_SENT',
        });
      return { id, scheduledAt: at.toISOString() };
    },
  );
};
