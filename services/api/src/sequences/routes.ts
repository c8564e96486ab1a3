import { randomBase62 } from '@tern/auth';
import { createSequenceStore, type SequenceStore, type TopicStore } from '@tern/bulk';
import {
  createSequenceBodySchema,
  ENROLLMENT_STATES,
  enrollBodySchema,
  enrollmentSchema,
  sequenceSchema,
  updateSequenceBodySchema,
} from '@tern/contracts';
import { httpError } from '@tern/http';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type AuthConfig, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  childListRoute,
  conflict,
  defineResource,
  getRoute,
  listRoute,
  newResourceId,
  notFound,
  pageQuerySchema,
  resourceErrors,
  resourceIdParam,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors, noContentSchema } from '../schemas.js';

const read: AuthConfig = { auth: 'jwt_or_key', scope: 'sequences:read' };
const write: AuthConfig = { auth: 'jwt_or_key', scope: 'sequences:write' };
const EXAMPLE_ID = 'seq_4Hs9dK2mQ7wE1rT6yU3iO8pA';
const params = resourceIdParam('sequence', EXAMPLE_ID);
const enrollmentParams = params.extend({
  enrollmentId: z
    .string()
    .min(1)
    .max(200)
    .meta({ description: 'Id of the enrollment.', example: 'enr_4Hs9dK2mQ7wE1rT6yU3iO8pA' }),
});
const EXAMPLE = sequenceSchema.meta()?.examples;
const enrollmentsQuerySchema = pageQuerySchema.extend({
  state: z
    .enum(ENROLLMENT_STATES, { error: `state must be one of ${ENROLLMENT_STATES.join(', ')}` })
    .optional()
    .meta({ description: 'Only the enrollments in this state.', example: 'active' }),
});

/** What the plugin uses (built by `apiRoutes`). */
export type SequenceRouteDeps = Pick<ApiRouteDeps, 'domainPolicy' | 'fromDomains' | 'now'> & {
  sequences: SequenceStore;
  topics: TopicStore;
};

/** `/sequences` (SPEC §15). The schedule itself is `createSequenceScheduler` (scheduler.ts). */
export const sequenceRoutes: FastifyPluginAsyncZod<SequenceRouteDeps> = async (app, deps) => {
  /** Every step's template must be the tenant's: a 400 naming each one that is not. */
  async function checkTemplates(tenantId: string, steps: readonly { templateId?: string | undefined }[]) {
    const problems: string[] = [];
    for (const [i, step] of steps.entries()) {
      if (step.templateId !== undefined && !(await deps.sequences.templateExists(tenantId, step.templateId)))
        problems.push(`body.steps.${i}.templateId: template ${step.templateId} not found`);
    }
    if (problems.length > 0) throw httpError(400, problems.join('; '), { code: 'FST_ERR_VALIDATION' });
  }

  /** A topic a sequence names must be the tenant's (SPEC §27). */
  async function checkTopic(tenantId: string, topic: string | null | undefined) {
    if (topic != null && (await deps.topics.get(tenantId, topic)) === null)
      throw httpError(400, `body.topic: topic ${topic} not found`, { code: 'FST_ERR_VALIDATION' });
  }

  app.post(
    '/sequences',
    {
      config: write,
      schema: {
        tags: [TAGS.sequences],
        operationId: 'createSequence',
        summary: 'Create a sequence',
        description:
          '1..20 steps; step *k* is sent at enrollment + the sum of `delayMinutes` up to *k*. Each step is a template of the tenant or own `subject` + `html`/`text`, rendered per contact.',
        security: KEY_OR_DASHBOARD,
        body: createSequenceBodySchema,
        response: {
          201: sequenceSchema,
          400: errors.badRequest('body.steps.0.subject: subject is required without templateId'),
          ...resourceErrors('sequence'),
        },
      },
    },
    async (request, reply) => {
      const tenantId = credentialOf(request).tenantId;
      await checkTemplates(tenantId, request.body.steps);
      await checkTopic(tenantId, request.body.topic);
      await deps.fromDomains.assertVerified(tenantId, [{ field: 'body.from', from: request.body.from }]);
      const sequence = await deps.sequences.insert(
        tenantId,
        newResourceId('sequence'),
        request.body,
        deps.now(),
      );
      return reply.status(201).send(sequence);
    },
  );

  listRoute(app, '/sequences', {
    config: read,
    tag: TAGS.sequences,
    operationId: 'listSequences',
    summary: 'List sequences',
    description: 'Newest first, each with per-step stats and enrollment counts.',
    item: sequenceSchema,
    what: 'sequence',
    page: { description: 'One page of sequences.', examples: EXAMPLE ?? [] },
    list: (tenantId, page) => deps.sequences.list(tenantId, page),
  });

  getRoute(app, '/sequences/:id', {
    config: read,
    tag: TAGS.sequences,
    operationId: 'getSequence',
    summary: 'Get a sequence',
    description: 'Its steps, each with `stats` like a campaign’s, and its enrollments by state.',
    item: sequenceSchema,
    What: 'Sequence',
    params,
    get: (tenantId, id) => deps.sequences.get(tenantId, id),
  });

  app.patch(
    '/sequences/:id',
    {
      config: write,
      schema: {
        tags: [TAGS.sequences],
        operationId: 'updateSequence',
        summary: 'Change a sequence',
        description:
          '`name`, `from` and/or `steps` (the whole list, 1..20). Enrollments keep their place: the index ' +
          'of their next step and its due time; the delays after it follow the new steps. An enrollment ' +
          'whose next step no longer exists completes when it falls due. Mail already sent is not changed.',
        security: KEY_OR_DASHBOARD,
        params,
        body: updateSequenceBodySchema,
        response: {
          200: sequenceSchema,
          400: errors.badRequest(
            'body.steps.0.delayMinutes: delayMinutes must be an integer from 0 to 525600',
          ),
          ...resourceErrors('Sequence', { notFound: true }),
        },
      },
    },
    async (request) => {
      const tenantId = credentialOf(request).tenantId;
      if (request.body.steps !== undefined) await checkTemplates(tenantId, request.body.steps);
      await checkTopic(tenantId, request.body.topic);
      if (request.body.from !== undefined)
        await deps.fromDomains.assertVerified(tenantId, [{ field: 'body.from', from: request.body.from }]);
      const updated = await deps.sequences.update(tenantId, request.params.id, request.body, deps.now());
      if (updated === null) throw notFound('Sequence');
      return updated;
    },
  );

  childListRoute(app, '/sequences/:id/enrollments', {
    config: read,
    tag: TAGS.sequences,
    operationId: 'listEnrollments',
    summary: 'List a sequence’s enrollments',
    description:
      'Newest first, each with its contact’s address, state, and next step (0-based `nextStep`, due at ' +
      '`nextDueAt` while active); `state` narrows to one state.',
    item: enrollmentSchema,
    What: 'Sequence',
    params,
    querystring: enrollmentsQuerySchema,
    page: {
      description: 'One page of enrollments.',
      examples: enrollmentSchema.meta()?.examples ?? [],
      badRequest: 'querystring.state: state must be one of active, completed, stopped, cancelled',
    },
    list: (tenantId, id, query) => deps.sequences.enrollments(tenantId, id, query),
  });

  app.post(
    '/sequences/:id/enrollments',
    {
      config: write,
      schema: {
        tags: [TAGS.sequences],
        operationId: 'enrollInSequence',
        summary: 'Enroll a contact',
        description:
          'The tenant’s contact with that address starts the sequence now (404 `Contact not found` when there is none). A contact already going through it → 409. Unsubscribing, a suppression or erasure stops the rest.',
        security: KEY_OR_DASHBOARD,
        params,
        body: enrollBodySchema,
        response: {
          201: enrollmentSchema,
          400: errors.badRequest('body.email: email must be a valid email address'),
          ...resourceErrors('Sequence', {
            notFound: true,
            conflict: 'This contact is already enrolled in the sequence',
          }),
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      // SPEC §20: enrolling queues mail from the sequence's From domain (production, real provider).
      const sequence = deps.domainPolicy?.requireVerified
        ? await deps.sequences.get(tenantId, request.params.id)
        : null;
      if (sequence !== null)
        await deps.fromDomains.assertVerified(tenantId, [
          { field: `sequence ${sequence.id} from`, from: sequence.from },
        ]);
      const outcome = await deps.sequences.enroll(
        tenantId,
        request.params.id,
        `enr_${randomBase62(24)}`,
        request.body.email,
        deps.now(),
      );
      if (outcome.kind === 'no_sequence') throw notFound('Sequence');
      if (outcome.kind === 'no_contact') throw notFound('Contact');
      if (outcome.kind === 'already_enrolled')
        throw conflict('This contact is already enrolled in the sequence');
      return reply.status(201).send(outcome.enrollment);
    },
  );

  app.delete(
    '/sequences/:id/enrollments/:enrollmentId',
    {
      config: write,
      schema: {
        tags: [TAGS.sequences],
        operationId: 'cancelEnrollment',
        summary: 'Stop an enrollment',
        description: 'No further step is sent (`cancelled`); again → 204.',
        security: KEY_OR_DASHBOARD,
        params: enrollmentParams,
        response: {
          204: noContentSchema.meta({ description: 'Stopped.' }),
          ...resourceErrors('Enrollment', { notFound: true }),
        },
      },
    },
    async (request, reply) => {
      const { id, enrollmentId } = request.params;
      const found = await deps.sequences.cancelEnrollment(
        credentialOf(request).tenantId,
        id,
        enrollmentId,
        deps.now(),
      );
      if (!found) throw notFound('Enrollment');
      return reply.status(204).send();
    },
  );
};

/** `sequences` in the routes' deps: its owner's repository over the pool (listed in `resources.generated.ts`). */
export const sequencesResource = defineResource({ sequences: createSequenceStore }, sequenceRoutes);
