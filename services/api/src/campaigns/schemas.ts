import { type CampaignStatus, campaignSchema } from '@tern/contracts';
import { httpError } from '@tern/http';
import type { AuthConfig } from '../credentials.js';
import { conflict, resourceIdParam } from '../resource-kit.js';

/** What the campaign route modules (`routes.ts`, `send-routes.ts`) share: auth, params, examples, errors. */

export const read: AuthConfig = { auth: 'jwt_or_key', scope: 'campaigns:read' };
export const write: AuthConfig = { auth: 'jwt_or_key', scope: 'campaigns:write' };
export const EXAMPLE_ID = 'cmp_4Hs9dK2mQ7wE1rT6yU3iO8pA';
export const params = resourceIdParam('campaign', EXAMPLE_ID);
export const EXAMPLE = campaignSchema.meta()?.examples;

export const bad = (message: string) => httpError(400, message, { code: 'FST_ERR_VALIDATION' });
export const notDraft = (id: string, status: CampaignStatus) =>
  conflict(`Campaign ${id} is ${status}: only a draft can be changed, deleted or sent`);
