import {
  batchEmailBodySchema,
  batchEmailResponseSchema,
  sendEmailBodySchema,
  sendEmailResponseSchema,
} from '@tern/contracts';
import { queuedEventId } from '@tern/domain';
import { positionOfWrite } from '@tern/event-log';
import { appendOr503 } from '@tern/http';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { accept, idempotent, type SendRouteDeps, withProject } from './accept.js';
import { contentBudgetHooks, createContentBudget } from './content-budget.js';
import { BATCH_BODY_LIMIT, idempotencyHeader, SEND_BODY_LIMIT, sendErrors } from './schemas.js';

/**
 * `POST /emails/send|batch`, `GET /emails/:id`, `POST /emails/:id/cancel`, `GET /emails/:id/content`
 * (SPEC §11). A send writes its content to `outgoing_emails`, appends `email.queued`, and answers
 * 202 once the log has it; the sender does the rest. The sends are here (their checks in
 * `accept.ts`), the reads, cancel and reschedule in `read-routes.ts` (a plugin of
 * their own).
 */
/** The position of one send: its `email.queued` (the id `queuedEvent` gives it). */
const queuedPosition = (emailId: string) => queuedEventId(emailId);

export const emailRoutes: FastifyPluginAsyncZod<SendRouteDeps> = async (app, deps) => {
  // Issue 40 item 8: bytes of content in flight bounded in total and per tenant (429 past them).
  const budget = contentBudgetHooks(deps.sending.contentBudget ?? createContentBudget(), SEND_BODY_LIMIT);
  app.post(
    '/emails/send',
    {
      // A 40 MB message with its attachments (SPEC §22); past the limit → 413 before parsing.
      bodyLimit: SEND_BODY_LIMIT,
      ...budget,
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
      const answerOf = (id: string) => ({ id, position: queuedPosition(id) });
      const answer = await idempotent(deps, request, 'send', bodies[0], async (plan) => {
        const [id] = await accept(
          deps,
          credential,
          bodies,
          () => 'body.',
          (ids) => (plan ? plan(answerOf(ids[0]!), ids) : Promise.resolve()),
        );
        return answerOf(id!);
      });
      return reply.status(answer.statusCode).send(answer.body);
    },
  );

  app.post(
    '/emails/batch',
    {
      // The whole batch at most one largest message (SPEC §22); a larger request is a 413.
      bodyLimit: BATCH_BODY_LIMIT,
      ...budget,
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
      // The batch's position covers every email of it: the last `email.queued` on each partition
      // of the log (they are keyed by email), known before the append.
      const answerOf = async (ids: readonly string[]) => ({
        data: ids.map((id) => ({ id, position: queuedPosition(id) })),
        position: await appendOr503(
          () =>
            positionOfWrite(
              deps.sending.log,
              ids.map((id) => ({ id: queuedPosition(id), key: id })),
            ),
          'queued',
        ),
      });
      const answer = await idempotent(deps, request, 'batch', bodies, async (plan) => {
        let planned: Awaited<ReturnType<typeof answerOf>> | undefined;
        const ids = await accept(deps, credential, bodies, prefix, async (ids) => {
          planned = await answerOf(ids);
          if (plan) await plan(planned, ids);
        });
        return planned ?? answerOf(ids);
      });
      return reply.status(answer.statusCode).send(answer.body);
    },
  );
};
