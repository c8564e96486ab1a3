import type { CampaignStore } from '@tern/bulk';
import { campaignStatusAnswerSchema } from '@tern/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { conflict, notFound, resourceErrors } from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { EXAMPLE_ID, notDraft, params, write } from './schemas.js';

/**
 * `POST /campaigns/:id/send` and `POST /campaigns/:id/cancel` (SPEC §15): what starts or stops a
 * campaign's fan-out. Registered by `campaignRoutes` on its own instance.
 */
export function campaignSendRoutes(
  app: Parameters<FastifyPluginAsyncZod>[0],
  deps: Pick<ApiRouteDeps, 'domainPolicy' | 'fromDomains' | 'now'> & { campaigns: CampaignStore },
): void {
  app.post(
    '/campaigns/:id/send',
    {
      config: write,
      schema: {
        tags: [TAGS.campaigns],
        operationId: 'sendCampaign',
        summary: 'Send a campaign',
        description:
          'A draft becomes `sending` (or `scheduled` until its `scheduledAt`); the fan-out creates one email per subscribed, non-suppressed contact of the audience at that moment, tagged `campaign:<id>`, exactly once per contact even across retries and restarts, then the campaign is `sent`. Not a draft → 409.',
        security: KEY_OR_DASHBOARD,
        params,
        response: {
          202: campaignStatusAnswerSchema.meta({
            description: 'Accepted: the fan-out runs in the background.',
          }),
          ...resourceErrors('Campaign', {
            notFound: true,
            conflict: `Campaign ${EXAMPLE_ID} is sent: only a draft can be changed, deleted or sent`,
          }),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { tenantId } = credentialOf(request);
      // SPEC §20: a campaign whose From domain is not verified sends nothing (production, real provider).
      const draft = deps.domainPolicy?.requireVerified ? await deps.campaigns.getRow(tenantId, id) : null;
      if (draft !== null)
        await deps.fromDomains.assertVerified(tenantId, [
          { field: `campaign ${id} from`, from: draft.from_address },
        ]);
      const outcome = await deps.campaigns.requestSend(tenantId, id, deps.now());
      if (outcome.kind === 'not_found') throw notFound('Campaign');
      if (outcome.kind === 'not_draft') throw notDraft(id, outcome.status);
      return reply.status(202).send({ id, status: outcome.row.status });
    },
  );

  app.post(
    '/campaigns/:id/cancel',
    {
      config: write,
      schema: {
        tags: [TAGS.campaigns],
        operationId: 'cancelCampaign',
        summary: 'Cancel a campaign',
        description:
          'A draft, or a scheduled campaign that has not fallen due, becomes `cancelled` and never sends. Already sending or sent → 409; cancelled again → 200.',
        security: KEY_OR_DASHBOARD,
        params,
        response: {
          200: campaignStatusAnswerSchema.meta({
            description: 'Cancelled.',
            examples: [{ id: EXAMPLE_ID, status: 'cancelled' }],
          }),
          ...resourceErrors('Campaign', {
            notFound: true,
            conflict: `Campaign ${EXAMPLE_ID} is sending: it can no longer be cancelled`,
          }),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const outcome = await deps.campaigns.cancel(credentialOf(request).tenantId, id, deps.now());
      if (outcome.kind === 'not_found') throw notFound('Campaign');
      if (outcome.kind === 'not_draft') {
        if (outcome.status === 'cancelled') return { id, status: 'cancelled' as const };
        throw conflict(`Campaign ${id} is ${outcome.status}: it can no longer be cancelled`);
      }
      return { id, status: outcome.row.status };
    },
  );
}
