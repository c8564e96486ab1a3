import { randomBase62 } from '@tern/auth';
import {
  type AutomationStore,
  type ContactStore,
  checkPropertyValue,
  createAutomationStore,
  type PropertyType,
  propertyNameSchema,
  segmentFilterSchema,
} from '@tern/bulk';
import {
  AUTOMATION_RUN_STATES,
  type AutomationStep,
  automationRunSchema,
  automationSchema,
  createAutomationBodySchema,
  trackEventBodySchema,
  trackEventResponseSchema,
  updateAutomationBodySchema,
  walkSteps,
} from '@tern/contracts';
import { httpError } from '@tern/http';
import { notifyReadModel } from '@tern/stores';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type AuthConfig, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  childListRoute,
  defineResource,
  deleteRoute,
  getRoute,
  listRoute,
  newResourceId,
  notFound,
  pageQuerySchema,
  resourceErrors,
  resourceIdParam,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors } from '../schemas.js';

const read: AuthConfig = { auth: 'jwt_or_key', scope: 'automations:read' };
const write: AuthConfig = { auth: 'jwt_or_key', scope: 'automations:write' };
const track: AuthConfig = { auth: 'jwt_or_key', scope: 'events:write' };
const params = resourceIdParam('automation', 'aut_4Hs9dK2mQ7wE1rT6yU3iO8pA');
const EXAMPLE = automationSchema.meta()?.examples;
const runsQuerySchema = pageQuerySchema.extend({
  state: z
    .enum(AUTOMATION_RUN_STATES, { error: `state must be one of ${AUTOMATION_RUN_STATES.join(', ')}` })
    .optional()
    .meta({ description: 'Only the runs in this state.', example: 'active' }),
});

/** What the plugin uses (built by `apiRoutes`). */
export type AutomationRouteDeps = Pick<ApiRouteDeps, 'fromDomains' | 'now' | 'pool' | 'readModel'> & {
  automations: AutomationStore;
  contacts: ContactStore;
};

/** `/automations` and `POST /events/track` (SPEC §27). The runner is services/worker's `createAutomationRunner`. */
export const automationRoutes: FastifyPluginAsyncZod<AutomationRouteDeps> = async (app, deps) => {
  /**
   * Every `send` step's template must be the tenant's, every `if` a valid segment filter, every
   * `update` a defined contact property given a value of its type (checked as a contact write
   * checks it): a 400 naming each one that is not. Resolves with the steps as stored (a date
   * property's value normalised to `…Z`, as contact writes store it).
   */
  async function checkSteps(tenantId: string, steps: readonly AutomationStep[]): Promise<AutomationStep[]> {
    const problems: string[] = [];
    const seen = new Set<string>();
    const updates = [...walkSteps(steps)].some(([s]) => 'update' in s);
    const types = updates ? await deps.contacts.propertyTypes(tenantId) : new Map<string, PropertyType>();
    for (const [step] of walkSteps(steps)) {
      if ('if' in step) {
        const parsed = segmentFilterSchema.safeParse(step.if);
        if (!parsed.success)
          problems.push(
            `body.steps: if: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'filter'}: ${i.message}`).join(', ')}`,
          );
      }
      if ('update' in step)
        for (const [name, value] of Object.entries(step.update)) {
          if (!propertyNameSchema.safeParse(name).success) {
            problems.push(
              `body.steps: update: ${name} is not a property name (a letter, then up to 63 letters, digits or _)`,
            );
            continue;
          }
          const checked = checkPropertyValue(types.get(name), name, value);
          if ('error' in checked) problems.push(`body.steps: update: ${checked.error}`);
        }
      if (!('send' in step) || seen.has(step.send)) continue;
      seen.add(step.send);
      if (!(await deps.automations.templateExists(tenantId, step.send)))
        problems.push(`body.steps: template ${step.send} not found`);
    }
    if (problems.length > 0) throw httpError(400, problems.join('; '), { code: 'FST_ERR_VALIDATION' });
    return normalised(steps, types);
  }

  app.post(
    '/automations',
    {
      config: write,
      schema: {
        tags: [TAGS.automations],
        operationId: 'createAutomation',
        summary: 'Create an automation',
        description:
          'From now on, each `trigger.event` of a contact (`contact.created`, `contact.updated` — by the API or a CSV import —, a delivery event of mail to the contact, `email.received` — mail from the contact —, or a custom event of `POST /events/track`) starts a run of `steps` for that contact, unless one is already active. A run is stopped when its contact unsubscribes, is suppressed or erased. `enabled: false` starts no run. An `update` step names defined contact properties with values of their types.',
        security: KEY_OR_DASHBOARD,
        body: createAutomationBodySchema,
        response: {
          201: automationSchema,
          400: errors.badRequest('body.steps.0.delay: delay must be an ISO 8601 duration …'),
          ...resourceErrors('automation'),
        },
      },
    },
    async (request, reply) => {
      const tenantId = credentialOf(request).tenantId;
      const steps = await checkSteps(tenantId, request.body.steps);
      if (request.body.from !== undefined)
        await deps.fromDomains.assertVerified(tenantId, [{ field: 'body.from', from: request.body.from }]);
      const created = await deps.automations.insert(
        tenantId,
        newResourceId('automation'),
        { ...request.body, steps },
        deps.now(),
      );
      return reply.status(201).send(created);
    },
  );

  listRoute(app, '/automations', {
    config: read,
    tag: TAGS.automations,
    operationId: 'listAutomations',
    summary: 'List automations',
    description: 'Newest first, each with its runs by state.',
    item: automationSchema,
    what: 'automation',
    page: { description: 'One page of automations.', examples: EXAMPLE ?? [] },
    list: (tenantId, page) => deps.automations.list(tenantId, page),
  });

  getRoute(app, '/automations/:id', {
    config: read,
    tag: TAGS.automations,
    operationId: 'getAutomation',
    summary: 'Get an automation',
    description: 'Its trigger, its steps and its runs by state.',
    item: automationSchema,
    What: 'Automation',
    params,
    get: (tenantId, id) => deps.automations.get(tenantId, id),
  });

  app.patch(
    '/automations/:id',
    {
      config: write,
      schema: {
        tags: [TAGS.automations],
        operationId: 'updateAutomation',
        summary: 'Change an automation',
        description:
          '`name`, `from`, `trigger`, `steps` (the whole tree) and/or `enabled`. Runs keep their position (a path such as `1.else.0`); a run whose step no longer exists completes when it next moves. Steps already done are not redone. `enabled: false` starts no further run; the runs going on finish.',
        security: KEY_OR_DASHBOARD,
        params,
        body: updateAutomationBodySchema,
        response: {
          200: automationSchema,
          400: errors.badRequest('body: name, from, trigger, steps or enabled is required'),
          ...resourceErrors('Automation', { notFound: true }),
        },
      },
    },
    async (request) => {
      const tenantId = credentialOf(request).tenantId;
      const steps =
        request.body.steps === undefined ? undefined : await checkSteps(tenantId, request.body.steps);
      if (request.body.from !== undefined)
        await deps.fromDomains.assertVerified(tenantId, [{ field: 'body.from', from: request.body.from }]);
      if (request.body.steps !== undefined && request.body.from === undefined) {
        const sends = [...walkSteps(request.body.steps)].some(([s]) => 'send' in s);
        const current = sends ? await deps.automations.get(tenantId, request.params.id) : null;
        if (current !== null && current.from === null)
          throw httpError(400, 'body.from: from is required when a step sends', {
            code: 'FST_ERR_VALIDATION',
          });
      }
      const updated = await deps.automations.update(
        tenantId,
        request.params.id,
        { ...request.body, ...(steps === undefined ? {} : { steps }) },
        deps.now(),
      );
      if (updated === null) throw notFound('Automation');
      return updated;
    },
  );

  deleteRoute(app, '/automations/:id', {
    config: write,
    tag: TAGS.automations,
    operationId: 'deleteAutomation',
    summary: 'Delete an automation',
    description: 'It and its runs go; no further step is done. Mail already sent stays sent.',
    What: 'Automation',
    params,
    deleted: 'Deleted.',
    remove: (tenantId, id) => deps.automations.delete(tenantId, id),
  });

  childListRoute(app, '/automations/:id/runs', {
    config: read,
    tag: TAGS.automations,
    operationId: 'listAutomationRuns',
    summary: 'List an automation’s runs',
    description:
      'Newest first: each run’s contact, state, `position` (the path of its current step), what it waits for and until when, and the steps done; `state` narrows to one state.',
    item: automationRunSchema,
    What: 'Automation',
    params,
    querystring: runsQuerySchema,
    page: {
      description: 'One page of runs.',
      examples: automationRunSchema.meta()?.examples ?? [],
      badRequest: 'querystring.state: state must be one of active, completed, stopped',
    },
    list: (tenantId, id, query) => deps.automations.runs(tenantId, id, query),
  });

  app.post(
    '/events/track',
    {
      config: track,
      schema: {
        tags: [TAGS.automations],
        operationId: 'trackEvent',
        summary: 'Track a custom event',
        description:
          'A custom event of the tenant’s contact with that address (404 `Contact not found` when there is none): it starts the automations it triggers and ends the runs of that contact waiting for it (handled by the worker within its poll interval), and it is in the event stream at once (`GET /events`, type = its name, `data: { tenantId, contactId, email, data }`).',
        security: KEY_OR_DASHBOARD,
        body: trackEventBodySchema,
        response: {
          202: trackEventResponseSchema,
          400: errors.badRequest('body.name: name must be 1 to 100 characters of A-Z, a-z, 0-9, _ . : -'),
          ...resourceErrors('Contact', { notFound: true }),
        },
      },
    },
    async (request, reply) => {
      const id = `evt_${randomBase62(24)}`;
      const outcome = await deps.automations.track({
        tenantId: credentialOf(request).tenantId,
        id,
        name: request.body.name,
        email: request.body.email,
        data: request.body.data ?? {},
        at: deps.now(),
      });
      if (outcome.kind === 'no_contact') throw notFound('Contact');
      // The event is in the stream: live tails (`GET /events/stream`) of every process read it now.
      const change = { kind: 'logs', tenants: [credentialOf(request).tenantId] } as const;
      await notifyReadModel(deps.pool, change);
      deps.readModel.changed(change);
      return reply.status(202).send({ id, name: request.body.name, contactId: outcome.contactId });
    },
  );
};

/** The steps with each `update` value as a contact write stores it (a date as `…Z`). */
function normalised(
  steps: readonly AutomationStep[],
  types: ReadonlyMap<string, PropertyType>,
): AutomationStep[] {
  return steps.map((step) => {
    let out: AutomationStep = step;
    if ('update' in step)
      out = {
        update: Object.fromEntries(
          Object.entries(step.update).map(([name, value]) => {
            const checked = checkPropertyValue(types.get(name), name, value);
            return [name, 'value' in checked ? checked.value : value];
          }),
        ),
      };
    if ('then' in out && out.then) out = { ...out, then: normalised(out.then, types) };
    if ('else' in out && out.else) out = { ...out, else: normalised(out.else, types) };
    return out;
  });
}

/** `automations` in the routes' deps: its owner's repository over the pool (listed in `resources.generated.ts`). */
export const automationsResource = defineResource({ automations: createAutomationStore }, automationRoutes);
