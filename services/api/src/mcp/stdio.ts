import type { Readable, Writable } from 'node:stream';
import { createTernMcpServer } from './server.js';
import type { RouteCaller } from './tools.js';

/** How long one tool's request to Tern may take before it is a tool error. */
export const MCP_FETCH_TIMEOUT_MS = 30_000;
/** Largest answer a tool passes on (a logs page of 100 entries is ≈ 60 KB). */
export const MCP_MAX_ANSWER_BYTES = 8 * 2 ** 20;

/**
 * Calls Tern's routes over HTTP with one API key (`npm run mcp`): the same requests the SDK makes,
 * so the server applies every check it applies to them.
 */
export function fetchCaller(baseUrl: string, apiKey: string, timeoutMs = MCP_FETCH_TIMEOUT_MS): RouteCaller {
  const base = baseUrl.replace(/\/+$/, '');
  return async ({ method, path, query, body }) => {
    const search = query && Object.keys(query).length > 0 ? `?${new URLSearchParams(query)}` : '';
    const res = await fetch(`${base}${path}${search}`, {
      method,
      headers: {
        authorization: `Bearer ${apiKey}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const length = Number(res.headers.get('content-length') ?? 0);
    if (length > MCP_MAX_ANSWER_BYTES) {
      await res.body?.cancel();
      return { status: 502, body: JSON.stringify({ message: `answer of ${length} bytes is too large` }) };
    }
    return { status: res.status, body: await res.text() };
  };
}

/** Why a request to Tern failed, without the key (it is in no URL or message here). */
export function describeFetchFailure(baseUrl: string) {
  return (error: unknown): string => {
    // undici's `fetch failed` carries the socket error as its cause (an AggregateError when
    // several addresses were tried).
    const first = (error as { cause?: { code?: string; errors?: { code?: string }[] } }).cause;
    const cause = first?.code ?? first?.errors?.find((e) => e.code)?.code;
    const name = (error as { name?: string }).name;
    if (name === 'TimeoutError') return `Tern at ${baseUrl} did not answer within ${MCP_FETCH_TIMEOUT_MS} ms`;
    return `Tern at ${baseUrl} could not be reached${cause ? ` (${cause})` : ''}`;
  };
}

export interface McpStdioOptions {
  /** Where Tern's API is (TERN_BASE_URL). */
  baseUrl: string;
  /** The API key every tool call presents (TERN_API_KEY). */
  apiKey: string;
  stdin?: Readable;
  stdout?: Writable;
}

/**
 * The MCP server over stdio (`npm run --silent mcp`, SPEC §28): an agent starts it with a key in
 * its environment; each tool calls Tern's API with that key. Resolves once connected; `closed`
 * resolves when the client goes away.
 */
export async function serveMcpStdio(opts: McpStdioOptions): Promise<{ closed: Promise<void> }> {
  const server = await createTernMcpServer(fetchCaller(opts.baseUrl, opts.apiKey), {
    failure: describeFetchFailure(opts.baseUrl),
  });
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const transport = new StdioServerTransport(opts.stdin, opts.stdout);
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  await server.connect(transport);
  // The client closing stdin ends the session.
  (opts.stdin ?? process.stdin).once('end', () => void server.close());
  return { closed };
}
