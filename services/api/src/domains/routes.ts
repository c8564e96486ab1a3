import {
  createDomainBodySchema,
  dmarcQuerySchema,
  dmarcSummarySchema,
  domainSchema,
  normalizeDomainName,
  type Role,
  updateDomainBodySchema,
} from '@tern/contracts';
import { retentionCutoff } from '@tern/domain';
import { httpError } from '@tern/http';
import { dmarcSummary } from '@tern/inbound';
import type { SendingDomains } from '@tern/sending-domains';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { type AuthConfig, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  deleteRoute,
  listAnswer,
  listResponses,
  newResourceId,
  notFound,
  pageQuerySchema,
  pageWindow,
  resourceErrors,
  resourceIdParam,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errorResponse, errors } from '../schemas.js';

/** What the domain routes need beyond the shared deps; the runtime builds it from the config. */
export interface DomainRouteOptions {
  domains: SendingDomains;
}

/**
 * Reads: a dashboard JWT of any role, or an API key with `email:send` — a program that sends may
 * see which From domains are verified (as Resend lets a key list domains); the records hold only
 * what is published in the DNS anyway.
 */
const read: AuthConfig = { auth: 'jwt_or_key', scope: 'email:send' };
/** Writes (add, verify now, delete): a dashboard JWT with role owner or admin; no API key (SPEC §20). */
const ADMINS: readonly Role[] = ['owner', 'admin'];
/** DMARC aggregate reports (SPEC §26): analytics, so a dashboard JWT of any role or a key with `analytics:read`. */
const dmarcRead: AuthConfig = { auth: 'jwt_or_key', scope: 'analytics:read' };
const write: AuthConfig = { auth: 'jwt_or_key', denyKeys: true, roles: ADMINS };

const writeForbidden = errorResponse(
  403,
  'Any API key (keys only read domains), or a dashboard JWT whose role is not owner or admin.',
  'Missing required API key scope',
);
const params = resourceIdParam('domain', 'dom_8Kd2mQ7wE1rT6yU3iO9pAs4L');
const EXAMPLE = domainSchema.meta()?.examples;

/** `/domains` (SPEC §20): sending domains and the DNS records that verify them. */
export const domainRoutes: FastifyPluginAsyncZod<
  Pick<ApiRouteDeps, 'now' | 'pool' | 'readModel' | 'retentionDays'> & { domains: DomainRouteOptions }
> = async (app, deps) => {
  const { domains } = deps.domains;

  app.post(
    '/domains',
    {
      config: write,
      schema: {
        tags: [TAGS.domains],
        operationId: 'createDomain',
        summary: 'Add a sending domain',
        description:
          'Dashboard JWT with role owner or admin. Generates an RSA-2048 DKIM key for the domain (its private key ' +
          'never leaves Tern) and answers the records to publish: DKIM, the return path (MX and SPF of the bounce ' +
          'subdomain) and a suggested DMARC. The domain is `pending` until the DNS shows them; then its mail is ' +
          'signed. The same name twice in a tenant → 409 `DOMAIN_EXISTS`; another tenant may add it too (its own ' +
          'DKIM selector). At most `DOMAINS_MAX_PER_TENANT` (default 50) domains a tenant → 409 `DOMAIN_LIMIT_REACHED`.',
        security: KEY_OR_DASHBOARD,
        body: createDomainBodySchema,
        response: {
          201: domainSchema,
          400: errors.badRequest(
            'body.name: name must be a domain name such as example.com (an IDN in its xn-- form)',
          ),
          ...resourceErrors('domain', {
            forbidden: writeForbidden,
            conflict: errorResponse(
              409,
              'The tenant already added this domain (`DOMAIN_EXISTS`), or has as many as DOMAINS_MAX_PER_TENANT allows (`DOMAIN_LIMIT_REACHED`).',
              'Domain example.com already exists',
              {
                code: 'DOMAIN_EXISTS',
              },
            ),
          }),
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const added = await domains.add(tenantId, newResourceId('domain'), request.body.name);
      if (added === 'exists') {
        const name = normalizeDomainName(request.body.name) ?? request.body.name;
        throw httpError(409, `Domain ${name} already exists`, { code: 'DOMAIN_EXISTS' });
      }
      if (added === 'limit')
        throw httpError(
          409,
          'The tenant has as many sending domains as this server allows (DOMAINS_MAX_PER_TENANT): delete one first',
          { code: 'DOMAIN_LIMIT_REACHED' },
        );
      request.log.info({ domainId: added.id }, 'sending domain added');
      return reply.status(201).send(added);
    },
  );

  app.get(
    '/domains',
    {
      config: read,
      schema: {
        tags: [TAGS.domains],
        operationId: 'listDomains',
        summary: 'List sending domains',
        description: 'Newest first, each with its records and their status.',
        security: KEY_OR_DASHBOARD,
        querystring: pageQuerySchema,
        response: listResponses(domainSchema, {
          what: 'domain',
          description: 'One page of domains.',
          examples: EXAMPLE ?? [],
        }),
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const { items, total } = await domains.list(tenantId, pageWindow(request.query));
      return listAnswer(items, request.query, total);
    },
  );

  app.get(
    '/domains/:id',
    {
      config: read,
      schema: {
        tags: [TAGS.domains],
        operationId: 'getDomain',
        summary: 'Get a sending domain',
        description: 'The domain, its records and the status of each as last checked.',
        security: KEY_OR_DASHBOARD,
        params,
        response: { 200: domainSchema, ...resourceErrors('Domain', { notFound: true }) },
      },
    },
    async (request) => {
      const found = await domains.get(credentialOf(request).tenantId, request.params.id);
      if (found === null) throw notFound('Domain');
      return found;
    },
  );

  app.get(
    '/domains/:id/dmarc',
    {
      config: dmarcRead,
      schema: {
        tags: [TAGS.domains],
        operationId: 'getDomainDmarc',
        summary: 'DMARC aggregate reports of a domain',
        description:
          'What receivers reported (RFC 7489 aggregate reports mailed to a receiving address of the tenant, SPEC §24) ' +
          'for the domain, over the reports whose period ended in the last `days` (1–365, default 30): the sending ' +
          'sources by IP with their volumes, the dispositions applied, the DMARC-aligned DKIM and SPF results, the ' +
          'reporters and the dates seen. A dashboard JWT of any role or an API key with `analytics:read`.',
        security: KEY_OR_DASHBOARD,
        params,
        querystring: dmarcQuerySchema,
        response: {
          200: dmarcSummarySchema,
          400: errors.badRequest('querystring.days: days must be an integer from 1 to 365'),
          ...resourceErrors('Domain', { notFound: true }),
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const found = await domains.get(tenantId, request.params.id);
      if (found === null) throw notFound('Domain');
      // The tenant's retention cut-off (SPEC §9): older reports are invisible before the job deletes them.
      const context = await deps.readModel.get(tenantId);
      const cutoff = retentionCutoff(deps.now(), context.retentionOverride ?? deps.retentionDays);
      return dmarcSummary(deps.pool, tenantId, found.name, request.query.days, cutoff);
    },
  );

  app.post(
    '/domains/:id/verify',
    {
      config: write,
      schema: {
        tags: [TAGS.domains],
        operationId: 'verifyDomain',
        summary: 'Check a domain’s DNS now',
        description:
          'Dashboard JWT with role owner or admin. Reads the records now and answers the new state: `verified` when ' +
          'DKIM and the return path match exactly; otherwise `reason` names each record not found or with another ' +
          'value. A `failed` domain that does not match yet becomes `pending` again for 72 h.',
        security: KEY_OR_DASHBOARD,
        params,
        response: {
          200: domainSchema,
          ...resourceErrors('Domain', { notFound: true, forbidden: writeForbidden }),
        },
      },
    },
    async (request) => {
      const checked = await domains.verify(credentialOf(request).tenantId, request.params.id);
      if (checked === null) throw notFound('Domain');
      return checked;
    },
  );

  app.patch(
    '/domains/:id',
    {
      config: write,
      schema: {
        tags: [TAGS.domains],
        operationId: 'updateDomain',
        summary: 'Receive mail at a domain (or stop)',
        description:
          'Dashboard JWT with role owner or admin. `receiving: true` adds the `inbound_mx` record (`10 <INBOUND_MX_HOST>`) ' +
          'and checks the DNS now; once that record is verified, mail to any address at the domain is received (SPEC §24). ' +
          '`false` removes the record: mail to the domain is refused again.',
        security: KEY_OR_DASHBOARD,
        params,
        body: updateDomainBodySchema,
        response: {
          200: domainSchema,
          400: errors.badRequest('body.receiving: receiving must be a boolean'),
          ...resourceErrors('Domain', { notFound: true, forbidden: writeForbidden }),
        },
      },
    },
    async (request) => {
      const updated = await domains.setReceiving(
        credentialOf(request).tenantId,
        request.params.id,
        request.body.receiving,
      );
      if (updated === null) throw notFound('Domain');
      return updated;
    },
  );

  deleteRoute(app, '/domains/:id', {
    config: write,
    tag: TAGS.domains,
    operationId: 'deleteDomain',
    summary: 'Delete a sending domain',
    description:
      'Dashboard JWT with role owner or admin. Deletes the domain and its key: its mail is no longer signed ' +
      '(within 30 s on every sender), and in production no longer accepted.',
    What: 'Domain',
    params,
    deleted: 'Deleted.',
    errors: { forbidden: writeForbidden },
    remove: async (tenantId, id, request) => {
      if (!(await domains.remove(tenantId, id))) return false;
      request.log.info({ domainId: id }, 'sending domain deleted');
      return true;
    },
  });
};
