import { cancelEmailResponseSchema, emailContentSchema, emailDetailSchema } from '@tern/contracts';
import { decideCancel, retentionCutoff, scheduleProblem } from '@tern/domain';
import { HttpError, httpError } from '@tern/http';
import { repliesTo } from '@tern/inbound';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { awaitConsistency, consistencyHeaderDoc, notConsistentYet } from '../consistency.js';
import { boundProject, type Credential, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { notFound, resourceErrors, resourceIdParam } from '../resource-kit.js';
import type { ApiRouteDeps, SendingDeps } from '../route-deps.js';
import { errors } from '../schemas.js';
import { rescheduleBodySchema, rescheduleResponses } from './schemas.js';

/**
 * `GET /emails/:id`, `GET /emails/:id/content`, `POST /emails/:id/cancel` and `PATCH /emails/:id`
 * (SPEC §11, §22): a plugin of their own, registered by `apiRoutes` right after the sends.
 */
export type EmailReadRouteDeps = Pick<
  ApiRouteDeps,
  'emails' | 'now' | 'pool' | 'readModel' | 'retentionDays'
> & {
  sending: SendingDeps;
};

export const emailReadRoutes: FastifyPluginAsyncZod<EmailReadRouteDeps> = async (app, deps) => {
  const { sending } = deps;

  /** The tenant's retention cut-off now (SPEC §9): an email created before it is not found. */
  async function cutoffOf(tenantId: string): Promise<Date> {
    const context = await deps.readModel.get(tenantId);
    return retentionCutoff(deps.now(), context.retentionOverride ?? deps.retentionDays);
  }

  /**
   * False when a project-bound key asks about an email outside its project (or one without a
   * project): such an email does not exist for it (404, SPEC §16).
   */
  async function visible(credential: Credential, id: string): Promise<boolean> {
    const bound = boundProject(credential);
    if (bound === null) return true;
    return (await deps.emails.project(credential.tenantId, id)) === bound;
  }

  app.get(
    '/emails/:id',
    {
      config: { auth: 'jwt_or_key', scope: 'email:read' },
      preHandler: awaitConsistency(deps),
      schema: {
        tags: [TAGS.emails],
        operationId: 'getEmail',
        summary: 'Get an email and its timeline',
        description:
          'The log entry plus `from`, `cc`, `bcc`, `scheduledAt`, `projectId`, `opens`, `clicks` and `events` ' +
          '(the timeline, oldest first). An email accepted but not yet projected shows QUEUED or SCHEDULED with no events. ' +
          'An email created before the tenant’s retention cut-off → 404, as in the logs. ' +
          'A key bound to a project sees its project’s emails only (another → 404). ' +
          'With `Tern-Consistent-With: <position>` (a send’s answer) it waits ≤ 5 s for the read models to include ' +
          'that whole write (every email of a batch), else 503 `NOT_CONSISTENT_YET` with `Retry-After`: never a 404 for an email accepted before it.',
        security: KEY_OR_DASHBOARD,
        params: resourceIdParam('email'),
        headers: consistencyHeaderDoc,
        response: {
          200: emailDetailSchema,
          ...resourceErrors('email'),
          404: errors.notFound,
          503: notConsistentYet,
        },
      },
    },
    async (request) => {
      const credential = credentialOf(request);
      const detail = await deps.emails.detail(
        credential.tenantId,
        request.params.id,
        await cutoffOf(credential.tenantId),
      );
      // A project-bound key sees the emails of its project only (SPEC §16).
      const bound = boundProject(credential);
      if (!detail || (bound !== null && detail.projectId !== bound)) throw notFound('Email');
      const replies = await repliesTo(deps.pool, credential.tenantId, detail.id);
      return {
        ...detail,
        replies: replies.map((r) => ({ id: r.id, receivedAt: r.receivedAt.toISOString() })),
      };
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
      const kept = await deps.emails.sandboxContent(
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
      // The store's compare-and-set says what it found; the domain decides the answer and the events.
      const decision = decideCancel(await deps.emails.cancel(tenantId, id, at), tenantId, id, at);
      if (decision.kind === 'not_found') throw notFound('Email');
      if (decision.kind === 'refused') {
        throw httpError(409, 'The email was already handed to the provider; it can no longer be cancelled', {
          code: 'ALREADY_SENT',
        });
      }
      if (decision.kind === 'cancel') {
        // The row already says cancelled (never sent); if this append fails the sender's sweep appends it.
        try {
          await sending.log.append(decision.events);
          await deps.emails.markCancelled(tenantId, id);
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
        body: rescheduleBodySchema,
        response: rescheduleResponses,
      },
    },
    async (request) => {
      const credential = credentialOf(request);
      const { id } = request.params;
      if (!(await visible(credential, id))) throw notFound('Email');
      const at = new Date(request.body.scheduledAt);
      const current = deps.now();
      const problem = scheduleProblem(at, current);
      if (problem !== null)
        throw httpError(400, `body.scheduledAt: ${problem}`, { code: 'FST_ERR_VALIDATION' });
      const outcome = await deps.emails.reschedule(credential.tenantId, id, at, current);
      if (outcome === 'not_found') throw notFound('Email');
      if (outcome === 'handed')
        throw httpError(409, 'Only a scheduled email not yet handed to the provider can be rescheduled', {
          code: 'ALREADY_SENT',
        });
      return { id, scheduledAt: at.toISOString() };
    },
  );
};
