import {
  type CampaignRow,
  type CampaignStore,
  createCampaignStore,
  DAILY_EVENTS,
  type DailyKind,
  type SegmentStore,
  type TopicStore,
} from '@tern/bulk';
import {
  campaignDailySchema,
  campaignSchema,
  contentProblem,
  createCampaignBodySchema,
  updateCampaignBodySchema,
} from '@tern/contracts';
import { analyticsPeriod, dayRange, scheduleProblem } from '@tern/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { analyticsQuerySchema } from '../analytics/schemas.js';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  defineResource,
  deleteRoute,
  getRoute,
  listRoute,
  newResourceId,
  notFound,
  resourceErrors,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors } from '../schemas.js';
import { bad, EXAMPLE, EXAMPLE_ID, notDraft, params, read, write } from './schemas.js';
import { campaignSendRoutes } from './send-routes.js';

/** What the plugin uses (built by `apiRoutes`). */
export type CampaignRouteDeps = Pick<ApiRouteDeps, 'domainPolicy' | 'fromDomains' | 'now'> & {
  campaigns: CampaignStore;
  segments: SegmentStore;
  topics: TopicStore;
};

/** `/campaigns` (SPEC §15). The fan-out itself is `createCampaignFanout` (fanout.ts). */
export const campaignRoutes: FastifyPluginAsyncZod<CampaignRouteDeps> = async (app, deps) => {
  /** SPEC §11's bound on `scheduledAt` (the contracts' `MAX_SCHEDULE_AHEAD_MS`), applied to campaigns too. */
  function checkSchedule(value: string | null | undefined) {
    if (value === undefined || value === null) return;
    const problem = scheduleProblem(new Date(value), deps.now());
    if (problem !== null) throw bad(`body.scheduledAt: ${problem}`);
  }

  async function checkTemplate(tenantId: string, id: string | null | undefined) {
    if (id === undefined || id === null) return;
    if (!(await deps.campaigns.templateExists(tenantId, id)))
      throw bad(`body.templateId: template ${id} not found`);
  }

  /** A segment and a topic a campaign names must be the tenant's (SPEC §27). */
  async function checkTargets(
    tenantId: string,
    b: { segment?: string | undefined; topic?: string | null | undefined },
  ) {
    if (b.segment !== undefined && (await deps.segments.get(tenantId, b.segment)) === null)
      throw bad(`body.segment: segment ${b.segment} not found`);
    if (b.topic != null && (await deps.topics.get(tenantId, b.topic)) === null)
      throw bad(`body.topic: topic ${b.topic} not found`);
  }

  app.post(
    '/campaigns',
    {
      config: write,
      schema: {
        tags: [TAGS.campaigns],
        operationId: 'createCampaign',
        summary: 'Create a campaign',
        description:
          'A draft: one message for every subscribed, non-suppressed contact of `audience` — or of `segment`, whose filter is evaluated once when the campaign starts sending — and, with `topic`, subscribed to that topic; sent by `POST /campaigns/:id/send`. Content is a template of the tenant or own `subject` + `html`/`text`, rendered per contact (`{{email}}`, `{{firstName}}`, `{{lastName}}`, attributes).',
        security: KEY_OR_DASHBOARD,
        body: createCampaignBodySchema,
        response: {
          201: campaignSchema.meta({ description: 'The draft.' }),
          400: errors.badRequest('body.subject: subject is required without templateId'),
          ...resourceErrors('campaign'),
        },
      },
    },
    async (request, reply) => {
      const tenantId = credentialOf(request).tenantId;
      const b = request.body;
      checkSchedule(b.scheduledAt);
      await checkTemplate(tenantId, b.templateId);
      await checkTargets(tenantId, b);
      await deps.fromDomains.assertVerified(tenantId, [{ field: 'body.from', from: b.from }]);
      const campaign = await deps.campaigns.insert(
        tenantId,
        {
          id: newResourceId('campaign'),
          name: b.name,
          from: b.from,
          audience: b.audience ?? null,
          segment: b.segment ?? null,
          topic: b.topic ?? null,
          templateId: b.templateId ?? null,
          subject: b.subject ?? null,
          html: b.html ?? null,
          text: b.text ?? null,
          scheduledAt: b.scheduledAt === undefined ? null : new Date(b.scheduledAt),
          sendRatePerMinute: b.sendRatePerMinute ?? null,
        },
        deps.now(),
      );
      return reply.status(201).send(campaign);
    },
  );

  listRoute(app, '/campaigns', {
    config: read,
    tag: TAGS.campaigns,
    operationId: 'listCampaigns',
    summary: 'List campaigns',
    description: 'Newest first, each with its stats.',
    item: campaignSchema,
    what: 'campaign',
    page: { description: 'One page of campaigns.', examples: EXAMPLE ?? [] },
    list: (tenantId, page) => deps.campaigns.list(tenantId, page),
  });

  getRoute(app, '/campaigns/:id', {
    config: read,
    tag: TAGS.campaigns,
    operationId: 'getCampaign',
    summary: 'Get a campaign',
    description:
      '`stats` counts its emails from the delivery log: `recipients` (emails created), `sent`, `delivered`, `opened`, `clicked`, `bounced`, `complained`, `unsubscribed`.',
    item: campaignSchema,
    What: 'Campaign',
    params,
    get: (tenantId, id) => deps.campaigns.get(tenantId, id),
  });

  app.get(
    '/campaigns/:id/daily',
    {
      config: read,
      schema: {
        tags: [TAGS.campaigns],
        operationId: 'getCampaignDaily',
        summary: 'A campaign’s emails per day',
        description:
          'The campaign’s emails per UTC day of what happened to them, over the last `days` days (1..90, ' +
          'default 30): each email counts once per kind on the day of its first `email.sent`, ' +
          '`email.delivered`, human `email.opened`, human `email.clicked` or `email.bounced` (scanners left ' +
          'out, as in `stats`). Over a period holding the whole campaign, `delivered`, `opened`, `clicked` ' +
          'and `bounced` add up to its `stats`. The analytics rollups count emails by the day they were ' +
          'created, which for a campaign is one day; this is its timeline.',
        security: KEY_OR_DASHBOARD,
        params,
        querystring: analyticsQuerySchema.pick({ days: true }),
        response: {
          200: campaignDailySchema,
          400: errors.badRequest('querystring.days: days must be an integer from 1 to 90'),
          ...resourceErrors('Campaign', { notFound: true }),
        },
      },
    },
    async (request) => {
      const tenantId = credentialOf(request).tenantId;
      const { id } = request.params;
      const { days } = request.query;
      if ((await deps.campaigns.getRow(tenantId, id)) === null) throw notFound('Campaign');
      const period = analyticsPeriod(deps.now(), days);
      const rows = await deps.campaigns.daily(tenantId, id, new Date(period.since));
      const zero = () =>
        Object.fromEntries(Object.keys(DAILY_EVENTS).map((k) => [k, 0])) as Record<DailyKind, number>;
      const byDay = new Map<string, Record<DailyKind, number>>();
      for (const r of rows) {
        const bucket = byDay.get(r.day) ?? zero();
        bucket[r.kind] = r.n;
        byDay.set(r.day, bucket);
      }
      return {
        days,
        daily: dayRange(period.since, days).map((date) => ({ date, ...(byDay.get(date) ?? zero()) })),
      };
    },
  );

  app.patch(
    '/campaigns/:id',
    {
      config: write,
      schema: {
        tags: [TAGS.campaigns],
        operationId: 'updateCampaign',
        summary: 'Change a draft campaign',
        description:
          'Only while `draft` (else 409). `null` clears an optional field; the result must keep content.',
        security: KEY_OR_DASHBOARD,
        params,
        body: updateCampaignBodySchema,
        response: {
          200: campaignSchema,
          400: errors.badRequest('body.scheduledAt: scheduledAt must be in the future'),
          ...resourceErrors('Campaign', {
            notFound: true,
            conflict: `Campaign ${EXAMPLE_ID} is sent: only a draft can be changed, deleted or sent`,
          }),
        },
      },
    },
    async (request) => {
      const tenantId = credentialOf(request).tenantId;
      const { id } = request.params;
      const b = request.body;
      checkSchedule(b.scheduledAt);
      await checkTemplate(tenantId, b.templateId);
      await checkTargets(tenantId, b);
      if (b.from !== undefined)
        await deps.fromDomains.assertVerified(tenantId, [{ field: 'body.from', from: b.from }]);
      const outcome = await deps.campaigns.updateDraft(tenantId, id, b, deps.now(), (r: CampaignRow) => {
        const problem = contentProblem({
          templateId: r.template_id ?? undefined,
          subject: r.subject ?? undefined,
          html: r.html ?? undefined,
          text: r.text ?? undefined,
        });
        // Thrown inside the update's transaction: the draft's update is rolled back.
        if (problem) throw bad(`body.${problem.path}: ${problem.message}`);
      });
      if (outcome.kind === 'not_found') throw notFound('Campaign');
      if (outcome.kind === 'not_draft') throw notDraft(id, outcome.status);
      return await deps.campaigns.of(outcome.row);
    },
  );

  deleteRoute(app, '/campaigns/:id', {
    config: write,
    tag: TAGS.campaigns,
    operationId: 'deleteCampaign',
    summary: 'Delete a draft campaign',
    description: 'Only while `draft` (else 409).',
    What: 'Campaign',
    params,
    deleted: 'Deleted.',
    errors: { conflict: `Campaign ${EXAMPLE_ID} is sent: only a draft can be changed, deleted or sent` },
    remove: async (tenantId, id) => {
      const outcome = await deps.campaigns.deleteDraft(tenantId, id);
      if (outcome !== 'deleted' && outcome !== 'not_found') throw notDraft(id, outcome);
      return outcome === 'deleted';
    },
  });

  campaignSendRoutes(app, deps);
};

/** `campaigns` in the routes' deps: its owner's repository over the pool (listed in `resources.generated.ts`). */
export const campaignsResource = defineResource({ campaigns: createCampaignStore }, campaignRoutes);
