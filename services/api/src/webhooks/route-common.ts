// What the `/webhooks*` route modules share: the auth config, the id parameter, the error answers.
import type { AuthConfig } from '../credentials.js';
import { resourceErrors, resourceIdParam } from '../resource-kit.js';
import { errorResponse } from '../schemas.js';

/** SPEC §17: an API key needs `webhooks:manage`; a tenant JWT of any role passes (SPEC part two). */
export const manage: AuthConfig = { auth: 'jwt_or_key', scope: 'webhooks:manage' };

export const params = resourceIdParam('webhook', 'wh_7Gq2vN9xKp4sLm3Tz8Rb1Wc5');

const forbidden = errorResponse(
  403,
  'The API key lacks `webhooks:manage` (`missingScope`), or is bound to a project (webhooks are tenant-wide).',
  'Missing required API key scope',
  { code: 'MISSING_SCOPE', missingScope: 'webhooks:manage' },
);
export const common = resourceErrors('Webhook', { forbidden });
/** The error options of a route naming one endpoint (`resourceErrors`, `deleteRoute`). */
export const notFoundErrors = { notFound: 'webhook endpoint', forbidden };
export const withNotFound = resourceErrors('Webhook', notFoundErrors);
