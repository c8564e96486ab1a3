import { createProjectBodySchema, projectSchema, updateProjectBodySchema } from '@tern/contracts';
import { httpError } from '@tern/http';
import { createProjectStore, type ProjectStore } from '@tern/tenant-settings';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { type AuthConfig, boundProject, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  conflict,
  defineResource,
  deleteRoute,
  listAnswer,
  listResponses,
  newResourceId,
  notFound,
  pageQuerySchema,
  resourceErrors,
  resourceIdParam,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors } from '../schemas.js';

const read: AuthConfig = { auth: 'jwt_or_key', scope: 'projects:read' };
const write: AuthConfig = { auth: 'jwt_or_key', scope: 'projects:write' };
const params = resourceIdParam('project', 'prj_4Hs9dK2mQ7wE1rT6yU3iO8pA');
const EXAMPLE = projectSchema.meta()?.examples;

/** What the plugin uses (built by `apiRoutes`). */
export type ProjectRouteDeps = Pick<ApiRouteDeps, 'now'> & { projects: ProjectStore };

/** `/projects` (SPEC §16). A project-bound API key sees and changes only its own project. */
export const projectRoutes: FastifyPluginAsyncZod<ProjectRouteDeps> = async (app, deps) => {
  /** The caller's view: another project than the bound one does not exist for it. */
  function visible(request: Parameters<typeof credentialOf>[0], id: string): boolean {
    const bound = boundProject(credentialOf(request));
    return bound === null || bound === id;
  }

  app.post(
    '/projects',
    {
      config: write,
      schema: {
        tags: [TAGS.projects],
        operationId: 'createProject',
        summary: 'Create a project',
        description: 'A key bound to a project cannot create another one (403).',
        security: KEY_OR_DASHBOARD,
        body: createProjectBodySchema,
        response: {
          201: projectSchema,
          400: errors.badRequest('body.name: name must be a string of 1 to 100 characters'),
          ...resourceErrors('project'),
        },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      if (boundProject(credential) !== null) {
        throw httpError(403, 'This API key is bound to a project: it cannot create projects', {
          code: 'FORBIDDEN',
        });
      }
      const project = await deps.projects.insert(
        credential.tenantId,
        newResourceId('project'),
        request.body.name,
        deps.now(),
      );
      return reply.status(201).send(project);
    },
  );

  app.get(
    '/projects',
    {
      config: read,
      schema: {
        tags: [TAGS.projects],
        operationId: 'listProjects',
        summary: 'List projects',
        description: 'Newest first. A project-bound key sees its own project only.',
        security: KEY_OR_DASHBOARD,
        querystring: pageQuerySchema,
        response: listResponses(projectSchema, {
          what: 'project',
          description: 'One page of projects.',
          examples: EXAMPLE ?? [],
        }),
      },
    },
    async (request) => {
      const credential = credentialOf(request);
      const { items, total } = await deps.projects.list(
        credential.tenantId,
        request.query,
        boundProject(credential),
      );
      return listAnswer(items, request.query, total);
    },
  );

  app.get(
    '/projects/:id',
    {
      config: read,
      schema: {
        tags: [TAGS.projects],
        operationId: 'getProject',
        summary: 'Get a project',
        description: 'A key bound to another project gets 404, as for an unknown id.',
        security: KEY_OR_DASHBOARD,
        params,
        response: { 200: projectSchema, ...resourceErrors('Project', { notFound: true }) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const found = visible(request, id) ? await deps.projects.get(credentialOf(request).tenantId, id) : null;
      if (found === null) throw notFound('Project');
      return found;
    },
  );

  app.patch(
    '/projects/:id',
    {
      config: write,
      schema: {
        tags: [TAGS.projects],
        operationId: 'updateProject',
        summary: 'Rename a project',
        description: 'Sets the name. A key bound to another project gets 404.',
        security: KEY_OR_DASHBOARD,
        params,
        body: updateProjectBodySchema,
        response: {
          200: projectSchema,
          400: errors.badRequest('body.name: name must be a string of 1 to 100 characters'),
          ...resourceErrors('Project', { notFound: true }),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const renamed = visible(request, id)
        ? await deps.projects.rename(credentialOf(request).tenantId, id, request.body.name, deps.now())
        : null;
      if (renamed === null) throw notFound('Project');
      return renamed;
    },
  );

  deleteRoute(app, '/projects/:id', {
    config: write,
    tag: TAGS.projects,
    operationId: 'deleteProject',
    summary: 'Delete a project',
    description: 'Only a project without emails (else 409). Keys bound to it then see nothing.',
    What: 'Project',
    params,
    deleted: 'Deleted.',
    errors: { conflict: 'Project prj_4Hs9dK2mQ7wE1rT6yU3iO8pA has emails: it cannot be deleted' },
    remove: async (tenantId, id, request) => {
      const outcome = visible(request, id) ? await deps.projects.delete(tenantId, id) : 'not_found';
      if (outcome === 'has_emails') throw conflict(`Project ${id} has emails: it cannot be deleted`);
      return outcome !== 'not_found';
    },
  });
};

/** `projects` in the routes' deps: its owner's repository over the pool (listed in `resources.generated.ts`). */
export const projectsResource = defineResource({ projects: createProjectStore }, projectRoutes);
