// The tools of Tern's MCP server (SPEC §28). Each tool is one of Tern's routes: its input is that
// route's own zod schema (query string or body), and calling it calls the route with the caller's
// API key — in-process over HTTP at `/mcp` (`routes.ts`), over the network for `npm run mcp`
// (`stdio.ts`). So scopes, project binding, rate limits, validation and the answer are the route's:
// a key without `email:send` gets the route's 403 back as a tool error, never a send.
import { inboundIdParamsSchema, inboundListQuerySchema, sendEmailBodySchema } from '@tern/contracts';
import { z } from 'zod';
import { breakdownQuerySchema } from '../analytics/breakdown-schemas.js';
import { analyticsQuerySchema } from '../analytics/schemas.js';
import { eventsQuerySchema } from '../events/schemas.js';
import { logsQuerySchema } from '../logs/schemas.js';
import { resourceIdParam } from '../resource-kit.js';

/** A call of one of Tern's routes. `query` values are strings, as a query string carries them. */
export interface RouteRequest {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string>;
  body?: unknown;
}

/** The route's answer: status and body text (JSON for every route a tool calls). */
export interface RouteAnswer {
  status: number;
  body: string;
}

/** Calls a route with the caller's credential (in-process or over the network). */
export type RouteCaller = (request: RouteRequest) => Promise<RouteAnswer>;

/** Where a tool's arguments go: the route's query string, its JSON body, or its `:id` path part. */
type Placement = 'query' | 'body' | 'id';

export interface TernTool {
  name: string;
  title: string;
  description: string;
  /** What an API key needs: the route's scope (the route checks it; listed for the docs). */
  scope: string;
  readOnly: boolean;
  placement: Placement;
  /** The route's own schema of what `placement` names. */
  input: z.ZodType;
  /** The route path; `:id` is replaced by the validated `id` argument. */
  method: 'GET' | 'POST';
  path: string;
}

export const TERN_TOOLS: readonly TernTool[] = [
  {
    name: 'send_email',
    title: 'Send an email',
    description:
      'Sends one email through Tern (POST /emails/send): from, to (up to 50), subject and html or text, ' +
      'or a templateId with variables; optional cc, bcc, replyTo, tags, scheduledAt, attachments. Answers ' +
      '{ id, ... }; follow the email with get_email. Needs an API key with scope email:send.',
    scope: 'email:send',
    readOnly: false,
    placement: 'body',
    input: sendEmailBodySchema,
    method: 'POST',
    path: '/emails/send',
  },
  {
    name: 'get_email',
    title: 'Get an email and its timeline',
    description:
      'One email by id (GET /emails/:id): status, recipients and their outcome, opens, clicks and the ' +
      'timeline of its events, oldest first. Needs scope email:read.',
    scope: 'email:read',
    readOnly: true,
    placement: 'id',
    input: resourceIdParam('email', 'em_01JZ8W4N3S6T0V2X4Z6B8D0F2H'),
    method: 'GET',
    path: '/emails/:id',
  },
  {
    name: 'list_logs',
    title: 'List the delivery log',
    description:
      'One page of the delivery log, newest first (GET /emails/logs). Filters combine: status ' +
      '(QUEUED, SENT, DELIVERED, BOUNCED, FAILED…), from/to (ISO 8601 times), tag, q (recipient, exact or ' +
      'prefix), projectId; limit ≤ 100; pass meta.nextCursor back as cursor for the next page. Numbers may be ' +
      'given as strings, as in a query string. Needs scope email:read.',
    scope: 'email:read',
    readOnly: true,
    placement: 'query',
    input: logsQuerySchema,
    method: 'GET',
    path: '/emails/logs',
  },
  {
    name: 'get_analytics_summary',
    title: 'Analytics summary',
    description:
      'Totals (sent, opened, clicked, bounced, complained, failed) and rates of the emails of the last `days` ' +
      'days (1–90, default 30), optionally of one projectId (GET /analytics/summary).',
    scope: 'analytics:read',
    readOnly: true,
    placement: 'query',
    input: analyticsQuerySchema,
    method: 'GET',
    path: '/analytics/summary',
  },
  {
    name: 'get_analytics_breakdown',
    title: 'Analytics by a dimension',
    description:
      'Totals and rates per value of one dimension (GET /analytics/breakdown): by = tag, template, project, ' +
      'campaign, domain, provider (mailbox provider), client, device or bounce category; days or from/to; ' +
      'filters by any dimension’s value; interval hour|day adds a series per row. Needs scope analytics:read.',
    scope: 'analytics:read',
    readOnly: true,
    placement: 'query',
    input: breakdownQuerySchema,
    method: 'GET',
    path: '/analytics/breakdown',
  },
  {
    name: 'list_inbound',
    title: 'List received mail',
    description:
      'One page of the mail Tern received for the tenant, newest first (GET /inbound): from, to, subject, ' +
      'SPF/DKIM/DMARC/ARC verdicts, inReplyTo (the id of the email it answers), receivedAt and attachments ' +
      '(metadata). Filters: to / from (an address, exact), since (ISO 8601); limit ≤ 100; pass meta.nextCursor ' +
      'back as cursor for the next page. Read one with get_inbound. Needs scope inbound:read.',
    scope: 'inbound:read',
    readOnly: true,
    placement: 'query',
    input: inboundListQuerySchema,
    method: 'GET',
    path: '/inbound',
  },
  {
    name: 'get_inbound',
    title: 'Read a received message',
    description:
      'One received message by id (GET /inbound/:id): its addresses, subject, text and HTML, headers, ' +
      'attachments (metadata: filename, type, size), verdicts, client address and HELO, Message-ID and the ' +
      'email it replies to. Needs scope inbound:read.',
    scope: 'inbound:read',
    readOnly: true,
    placement: 'id',
    input: inboundIdParamsSchema,
    method: 'GET',
    path: '/inbound/:id',
  },
  {
    name: 'list_events',
    title: 'List events after a cursor',
    description:
      'The tenant’s events (delivery, inbound, domain, contact…) in one order that never changes (GET /events): ' +
      'after (a cursor: an event’s `cursor` or the page’s `next`; absent → from the oldest kept), limit ≤ 1000, ' +
      'types (a comma list, e.g. "email.bounced,email.complained"), emailId, tag, project. Page with after = next: ' +
      'every event exactly once. Needs scope events:read.',
    scope: 'events:read',
    readOnly: true,
    placement: 'query',
    input: eventsQuerySchema,
    method: 'GET',
    path: '/events',
  },
];

/** An MCP tool result. */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export const toolError = (text: string): ToolResult => ({ content: [{ type: 'text', text }], isError: true });

function issuesText(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
}

/**
 * A tool's arguments as the route's query string: scalars as their text (`limit: 20` → `"20"`),
 * anything else refused — a query string holds no objects.
 */
function asQuery(args: Record<string, unknown>): Record<string, string> | string {
  const query: Record<string, string> = {};
  for (const [key, value] of Object.entries(args)) {
    if (value === undefined || value === null) continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      query[key] = String(value);
    else return `${key}: must be a string or a number`;
  }
  return query;
}

/**
 * The route request of a tool call, or the message of a tool error: the arguments are validated
 * by the route's schema first (a clear message without a round trip), then sent as they came —
 * the route validates them again, as it does every request.
 */
export function routeRequestOf(tool: TernTool, args: Record<string, unknown>): RouteRequest | string {
  if (tool.placement === 'body') {
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) return `Invalid arguments: ${issuesText(parsed.error)}`;
    return { method: tool.method, path: tool.path, body: args };
  }
  const query = asQuery(args);
  if (typeof query === 'string') return `Invalid arguments: ${query}`;
  const parsed = tool.input.safeParse(query);
  if (!parsed.success) return `Invalid arguments: ${issuesText(parsed.error)}`;
  if (tool.placement === 'id') {
    const { id = '', ...rest } = query;
    const extra = Object.keys(rest);
    if (extra.length > 0) return `Invalid arguments: unknown ${extra.join(', ')}`;
    // An empty id would name the collection (`/inbound/`), not one of its members.
    if (id === '') return 'Invalid arguments: id: must not be empty';
    return { method: tool.method, path: tool.path.replace(':id', encodeURIComponent(id)) };
  }
  return { method: tool.method, path: tool.path, query };
}

/** The route's answer as the tool's result: its JSON on success, its status and message as an error. */
export function toolResultOf(answer: RouteAnswer): ToolResult {
  let json: unknown;
  try {
    json = JSON.parse(answer.body);
  } catch {
    json = undefined;
  }
  if (answer.status >= 200 && answer.status < 300) {
    const structured =
      typeof json === 'object' && json !== null && !Array.isArray(json)
        ? { structuredContent: json as Record<string, unknown> }
        : {};
    return { content: [{ type: 'text', text: answer.body }], ...structured };
  }
  const error = (typeof json === 'object' && json !== null ? json : {}) as {
    code?: string;
    message?: string;
  };
  const message = error.message ?? (answer.body.slice(0, 500) || 'no message');
  return toolError(`Tern answered ${answer.status}${error.code ? ` ${error.code}` : ''}: ${message}`);
}

/** The JSON Schema a client sees: the route schema's input side (what may be sent). */
export function inputJsonSchema(tool: TernTool): Record<string, unknown> {
  const schema = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  const { $schema: _dialect, ...rest } = schema;
  return { ...rest, type: 'object' };
}
