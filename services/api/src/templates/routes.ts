import {
  createTemplateBodySchema,
  type Role,
  renderedTemplateSchema,
  renderTemplateBodySchema,
  replaceTemplateBodySchema,
  templateSchema,
  templateSummarySchema,
} from '@tern/contracts';
import { renderTemplate, templateSyntaxError } from '@tern/domain';
import { httpError } from '@tern/http';
import { createTemplateStore, type TemplateContentInput, type TemplateStore } from '@tern/templates';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { type AuthConfig, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  conflict,
  defineResource,
  deleteRoute,
  getRoute,
  listRoute,
  newResourceId,
  notFound,
  resourceErrors,
  resourceIdParam,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errorResponse, errors } from '../schemas.js';

/** Reads: a key with `templates:read`, or a dashboard JWT of any role (SPEC §12). */
const read: AuthConfig = { auth: 'jwt_or_key', scope: 'templates:read' };
/** Writes: a dashboard JWT with role owner or admin; no API key, whatever its scopes. */
const ADMINS: readonly Role[] = ['owner', 'admin'];
const write: AuthConfig = { auth: 'jwt_or_key', denyKeys: true, roles: ADMINS };

const writeForbidden = errorResponse(
  403,
  'Any API key (keys only read templates), or a dashboard JWT whose role is not owner or admin.',
  'Missing required API key scope',
  { code: 'MISSING_SCOPE' },
);
const writeErrors = resourceErrors('template', { forbidden: writeForbidden });

const params = resourceIdParam('template', 'tpl_8Zc1qW4rT7yU2iO5pA3sD6fG');

/** The template's content, checked: a part Mustache cannot parse is a 400 naming it. */
function content(body: {
  name: string;
  subject: string;
  html?: string | null | undefined;
  text?: string | null | undefined;
}): TemplateContentInput {
  const input = { name: body.name, subject: body.subject, html: body.html ?? null, text: body.text ?? null };
  for (const field of ['subject', 'html', 'text'] as const) {
    const value = input[field];
    const problem = value === null ? null : templateSyntaxError(value);
    if (problem !== null) {
      throw httpError(400, `body.${field}: not a valid template: ${problem}`, { code: 'FST_ERR_VALIDATION' });
    }
  }
  return input;
}

/** What the plugin uses (built by `apiRoutes`). */
export type TemplateRouteDeps = Pick<ApiRouteDeps, 'now'> & { templates: TemplateStore };

/** `/templates` (SPEC §12): the reference implementation of the resource pattern (docs/architecture.md). */
export const templateRoutes: FastifyPluginAsyncZod<TemplateRouteDeps> = async (app, deps) => {
  app.post(
    '/templates',
    {
      config: write,
      schema: {
        tags: [TAGS.templates],
        operationId: 'createTemplate',
        summary: 'Create a template',
        description:
          'Dashboard JWT with role owner or admin. `id` is optional (default `tpl_…`); an id the tenant already ' +
          'uses → 409. Needs `html` or `text`; every part must be a valid Mustache template.',
        security: KEY_OR_DASHBOARD,
        body: createTemplateBodySchema,
        response: {
          201: templateSchema,
          400: errors.badRequest('body.name: name must be a string of 1 to 100 characters'),
          ...writeErrors,
          409: errorResponse(
            409,
            'The tenant already has a template with this id.',
            'Template welcome already exists',
          ),
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const id = request.body.id ?? newResourceId('template');
      const created = await deps.templates.insert(tenantId, id, content(request.body), deps.now());
      if (created === null) throw conflict(`Template ${id} already exists`);
      return reply.status(201).send(created);
    },
  );

  listRoute(app, '/templates', {
    config: read,
    tag: TAGS.templates,
    operationId: 'listTemplates',
    summary: 'List templates',
    description: 'Newest first, without content (`GET /templates/:id` has it).',
    item: templateSummarySchema,
    what: 'template',
    page: {
      description: 'One page of templates.',
      examples: [
        {
          id: 'tpl_8Zc1qW4rT7yU2iO5pA3sD6fG',
          name: 'Welcome',
          subject: 'Welcome, {{firstName}}',
          createdAt: '2026-06-15T12:00:00.000Z',
          updatedAt: '2026-06-15T12:00:00.000Z',
        },
      ],
    },
    list: (tenantId, page) => deps.templates.list(tenantId, page),
  });

  getRoute(app, '/templates/:id', {
    config: read,
    tag: TAGS.templates,
    operationId: 'getTemplate',
    summary: 'Get a template',
    description: 'The template with its content. `templates:read` key or any dashboard JWT.',
    item: templateSchema,
    What: 'Template',
    params,
    get: (tenantId, id) => deps.templates.get(tenantId, id),
  });

  app.put(
    '/templates/:id',
    {
      config: write,
      schema: {
        tags: [TAGS.templates],
        operationId: 'replaceTemplate',
        summary: 'Replace a template',
        description:
          'Dashboard JWT with role owner or admin. Replaces name, subject and content (an absent part becomes ' +
          'null). Top-templates shows the new name and subject at once.',
        security: KEY_OR_DASHBOARD,
        params,
        body: replaceTemplateBodySchema,
        response: {
          200: templateSchema,
          400: errors.badRequest('body.html: html or text is required'),
          ...resourceErrors('Template', { notFound: 'template', forbidden: writeForbidden }),
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const replaced = await deps.templates.replace(
        tenantId,
        request.params.id,
        content(request.body),
        deps.now(),
      );
      if (replaced === null) throw notFound('Template');
      return replaced;
    },
  );

  deleteRoute(app, '/templates/:id', {
    config: write,
    tag: TAGS.templates,
    operationId: 'deleteTemplate',
    summary: 'Delete a template',
    description:
      'Dashboard JWT with role owner or admin. The template’s analytics stay; top-templates then shows its ' +
      'id as name and an empty subject.',
    What: 'Template',
    params,
    deleted: 'Deleted.',
    errors: { notFound: 'template', forbidden: writeForbidden },
    remove: (tenantId, id) => deps.templates.delete(tenantId, id),
  });

  app.post(
    '/templates/:id/render',
    {
      config: read,
      schema: {
        tags: [TAGS.templates],
        operationId: 'renderTemplate',
        summary: 'Preview a template',
        description:
          'Renders the template with `variables` exactly as the sender does: `{{x}}` HTML-escaped in html, plain ' +
          'in subject and text, a missing variable empty. Sends nothing.',
        security: KEY_OR_DASHBOARD,
        params,
        body: renderTemplateBodySchema,
        response: {
          200: renderedTemplateSchema,
          400: errors.badRequest('body.variables: variables must be an object'),
          ...resourceErrors('Template', { notFound: true }),
        },
      },
    },
    async (request) => {
      const found = await deps.templates.get(credentialOf(request).tenantId, request.params.id);
      if (found === null) throw notFound('Template');
      return renderTemplate(found, request.body.variables ?? {});
    },
  );
};

/** `templates` in the routes' deps: its owner's repository over the pool (listed in `resources.generated.ts`). */
export const templatesResource = defineResource({ templates: createTemplateStore }, templateRoutes);
