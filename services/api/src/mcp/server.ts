import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { onFirstUse } from '@tern/kernel';
import {
  inputJsonSchema,
  type RouteCaller,
  routeRequestOf,
  TERN_TOOLS,
  type TernTool,
  type ToolResult,
  toolError,
  toolResultOf,
} from './tools.js';

/** The MCP SDK, loaded with the first MCP session, not with the process (issue 45, item 6). */
const loadSdk = onFirstUse(() =>
  Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]),
);

export const MCP_SERVER_INFO = { name: 'tern', version: '0.1.0' } as const;

const INSTRUCTIONS =
  'Tern sends email and reads its delivery log, analytics, inbound mail and event stream for one tenant: ' +
  'the tenant of the API key this server was given. Each tool is one Tern API route and needs that ' +
  'route’s scope; a refused call comes back as a tool error naming the status and the reason.';

/** What a failed call of a route looks like to the caller (the route could not be reached at all). */
export type CallFailure = (error: unknown) => string;

/**
 * An MCP server over Tern's routes (SPEC §28): the tools of `tools.ts`, every call made through
 * `call` with the caller's credential. The low-level server, so that the input schemas a client
 * sees are the routes' own and every bad argument is a tool error (never a protocol error).
 */
export async function createTernMcpServer(
  call: RouteCaller,
  opts: { tools?: readonly TernTool[]; failure?: CallFailure } = {},
): Promise<Server> {
  const [{ Server }, { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError }] =
    await loadSdk();
  const tools = opts.tools ?? TERN_TOOLS;
  const byName = new Map(tools.map((t) => [t.name, t]));
  const listed = tools.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: inputJsonSchema(t) as { type: 'object'; [key: string]: unknown },
    annotations: { title: t.title, readOnlyHint: t.readOnly, openWorldHint: !t.readOnly },
  }));
  const server = new Server(MCP_SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<ToolResult> => {
    const tool = byName.get(request.params.name);
    // The protocol's answer to a tool that does not exist (MCP: "Unknown tool" → -32602).
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const routeRequest = routeRequestOf(tool, request.params.arguments ?? {});
    if (typeof routeRequest === 'string') return toolError(routeRequest);
    try {
      return toolResultOf(await call(routeRequest));
    } catch (error) {
      return toolError(opts.failure?.(error) ?? 'Tern could not be reached; try again later');
    }
  });
  return server;
}
