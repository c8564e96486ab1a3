import { httpError } from '@tern/http';
import { onFirstUse } from '@tern/kernel';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SEND_BODY_LIMIT } from '../emails/schemas.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { errorResponse, errors } from '../schemas.js';
import { createTernMcpServer } from './server.js';
import type { RouteCaller } from './tools.js';

/** The MCP SDK's HTTP transport, loaded with the first MCP request (issue 45, item 6). */
const loadTransport = onFirstUse(
  () => import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
);

/** A `send_email` call carries a send's body (attachments included) inside its JSON-RPC envelope. */
export const MCP_BODY_LIMIT = SEND_BODY_LIMIT + 64 * 1024;

/**
 * Calls Tern's routes in-process with the credential of the MCP request (the headers it came with)
 * and from its address: the route's auth hook, scopes, limits and validation apply to every tool
 * call as they would to the same request sent directly.
 */
export function injectCaller(root: FastifyInstance, request: FastifyRequest): RouteCaller {
  const headers: Record<string, string> = {};
  for (const name of ['authorization', 'x-api-key'] as const) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return async ({ method, path, query, body }) => {
    const search = query && Object.keys(query).length > 0 ? `?${new URLSearchParams(query)}` : '';
    const res = await root.inject({
      method,
      url: `${path}${search}`,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      remoteAddress: request.ip,
    });
    return { status: res.statusCode, body: res.body };
  };
}

/** The Fastify request as the web-standard Request the SDK's transport reads (the body is passed parsed). */
function webRequest(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === 'content-length') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(`http://${request.hostname || 'localhost'}${request.url}`, { method: 'POST', headers });
}

const LOGS_CALL = { name: 'list_logs', arguments: { status: 'DELIVERED', limit: 10 } };

const NOT_ALLOWED = 'This MCP server keeps no session and opens no stream: POST each JSON-RPC message';

/**
 * `/mcp` (SPEC §28): the MCP server over Streamable HTTP, stateless — each POST is one JSON-RPC
 * message answered as JSON, with a server and transport of its own. Registered inside `apiRoutes`,
 * so the credential is checked by the same hooks as every route (rate limit, failed-credential
 * limiter, auth) before the MCP layer sees the request; each tool call then goes through its
 * route with that credential (`injectCaller`). Decisions: docs/mcp.md.
 */
export const mcpRoutes: FastifyPluginAsyncZod = async (app) => {
  const root: FastifyInstance = app;
  const description =
    'Model Context Protocol, Streamable HTTP transport, stateless: POST one JSON-RPC message (`initialize`, ' +
    '`tools/list`, `tools/call`…) with `Accept: application/json, text/event-stream`; the answer is JSON. ' +
    'Any API key (or dashboard JWT) opens it; each tool is one route and needs that route’s scope — a refusal ' +
    'is a tool result with `isError: true`. Tools and their scopes: docs/mcp.md.';
  app.post(
    '/mcp',
    {
      bodyLimit: MCP_BODY_LIMIT,
      config: { auth: 'jwt_or_key' },
      schema: {
        tags: [TAGS.mcp],
        operationId: 'postMcp',
        summary: 'MCP (Streamable HTTP)',
        description,
        security: KEY_OR_DASHBOARD,
        // Any JSON: the SDK's transport judges the message and answers a JSON-RPC error itself.
        body: z.unknown().meta({
          description: 'One JSON-RPC 2.0 message of the MCP protocol.',
          examples: [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: LOGS_CALL }],
        }),
        response: {
          200: z.unknown().meta({
            description:
              'The JSON-RPC answer. A refused or invalid tool call is a result with `isError: true` (here a key without `email:read`).',
            examples: [
              {
                jsonrpc: '2.0',
                id: 1,
                result: {
                  content: [
                    { type: 'text', text: 'Tern answered 403 MISSING_SCOPE: Missing required API key scope' },
                  ],
                  isError: true,
                },
              },
            ],
          }),
          202: z.undefined().meta({ description: 'A notification (no answer).' }),
          400: errors.badRequest('Body is not valid JSON'),
          401: errors.unauthorized,
          406: z.unknown().meta({
            description:
              'The `Accept` header lacks `application/json` and `text/event-stream` (a JSON-RPC error).',
            examples: [
              {
                jsonrpc: '2.0',
                error: {
                  code: -32000,
                  message: 'Not Acceptable: Client must accept both application/json and text/event-stream',
                },
                id: null,
              },
            ],
          }),
          413: errorResponse(413, 'The message is larger than a send allows.', 'Request body is too large'),
        },
      },
    },
    async (request, reply) => {
      const server = await createTernMcpServer(injectCaller(root, request));
      const { WebStandardStreamableHTTPServerTransport } = await loadTransport();
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      try {
        await server.connect(transport);
        const response = await transport.handleRequest(webRequest(request), { parsedBody: request.body });
        const text = await response.text();
        reply.status(response.status as 200);
        response.headers.forEach((value, name) => {
          if (name !== 'content-length') reply.header(name, value);
        });
        return reply.send(text);
      } finally {
        await server.close();
      }
    },
  );
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: '/mcp',
      config: { auth: 'jwt_or_key' },
      schema: {
        tags: [TAGS.mcp],
        operationId: method === 'GET' ? 'getMcp' : 'deleteMcp',
        summary: `MCP: ${method} is not used`,
        description:
          '405 `METHOD_NOT_ALLOWED` (what the MCP transport specifies for a server without a stream): the server ' +
          'keeps no session and opens no stream; POST each message.',
        security: KEY_OR_DASHBOARD,
        response: { 401: errors.unauthorized, 405: errors.methodNotAllowed },
      },
      handler: async () => {
        throw httpError(405, NOT_ALLOWED, { code: 'METHOD_NOT_ALLOWED' }, { allow: 'POST' });
      },
    });
  }
};
