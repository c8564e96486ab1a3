import { ERROR_CODES_BY_STATUS, ERROR_STATUSES } from '@tern/contracts';
import { CREDENTIAL_EXTENSION } from './openapi.js';
import { buildReferenceApp } from './reference-app.js';

export { buildReferenceApp, REFERENCE_SENDGRID_KEY } from './reference-app.js';

/**
 * `docs/api.md`, generated from the OpenAPI document (`/docs/json`): every route with who may
 * call it, its parameters, an example request (curl) and an example of every answer. The
 * examples are the ones in the zod schemas, so the reference cannot drift from the code;
 * `test/contract/app.unit.test.ts` ("the API reference") fails when the file is older than the routes
 * (`npm run docs:api` rewrites it).
 */

// Only what the renderer reads of the document.
interface Schema {
  type?: string | string[];
  description?: string;
  example?: unknown;
  examples?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
}
interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  description?: string;
  example?: unknown;
  schema?: Schema;
}
interface Media {
  schema?: Schema;
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
}
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, Media> };
  responses?: Record<string, { description?: string; content?: Record<string, Media> }>;
  security?: Array<Record<string, string[]>>;
  [CREDENTIAL_EXTENSION]?: string;
}
export interface OpenApiDocument {
  info: { title: string; version: string };
  tags?: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
}

const METHOD_ORDER = ['get', 'post', 'put', 'patch', 'delete'];

/** The media type a body is documented in: JSON when it is one of them, else the first. */
function firstMedia(content: Record<string, Media> | undefined): [string | undefined, Media | undefined] {
  if (content === undefined) return [undefined, undefined];
  if (content['application/json']) return ['application/json', content['application/json']];
  const first = Object.entries(content)[0];
  return first ? [first[0], first[1]] : [undefined, undefined];
}

function exampleOf(media: Media | undefined): unknown {
  if (media === undefined) return undefined;
  if (media.example !== undefined) return media.example;
  const named = media.examples && Object.values(media.examples)[0];
  if (named?.value !== undefined) return named.value;
  return media.schema?.example ?? media.schema?.examples?.[0] ?? fromProperties(media.schema);
}

/**
 * An object whose schema has no example of its own (zod leaves an object's `examples` out of the
 * input schema when a field transforms, e.g. an address lowercased): its fields' examples.
 */
function fromProperties(schema: Schema | undefined): Record<string, unknown> | undefined {
  const entries = Object.entries(schema?.properties ?? {}).flatMap(([name, field]) => {
    const value = field.example ?? field.examples?.[0];
    return value === undefined ? [] : [[name, value] as const];
  });
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
}

function paramExample(p: Parameter): string {
  const value = p.example ?? p.schema?.example ?? p.schema?.examples?.[0] ?? p.schema?.default;
  return value === undefined ? `{${p.name}}` : String(value);
}

function typeOf(schema: Schema | undefined): string {
  if (schema === undefined) return '';
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(' \\| ');
  const type = Array.isArray(schema.type) ? schema.type.join(' \\| ') : (schema.type ?? 'any');
  const range =
    schema.minimum !== undefined || schema.maximum !== undefined
      ? ` ${schema.minimum ?? ''}..${schema.maximum ?? ''}`
      : '';
  return `${type}${range}`;
}

const cell = (text: string | undefined) => (text ?? '').replaceAll('|', '\\|').replaceAll('\n', ' ');
const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;
const json = (value: unknown) => `\`\`\`json\n${JSON.stringify(value, null, 2)}\n\`\`\``;

/** Which token the example request carries: an API key when keys may call the route, else a dashboard JWT. */
function tokenVariable(op: Operation): string {
  const keysAllowed =
    (op.security ?? []).some((s) => 'apiKey' in s || 'apiKeyHeader' in s) &&
    !(op[CREDENTIAL_EXTENSION] ?? '').includes('every API key gets 403');
  return keysAllowed ? '$TERN_API_KEY' : '$TERN_JWT';
}

function curl(method: string, path: string, op: Operation): string {
  const url = path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const p = op.parameters?.find((x) => x.in === 'path' && x.name === name);
    return encodeURIComponent(p ? paramExample(p) : `{${name}}`);
  });
  const lines = [`curl -X ${method.toUpperCase()} "$TERN_URL${url}"`];
  if (op.security?.length) lines.push(`-H "Authorization: Bearer ${tokenVariable(op)}"`);
  const [bodyType, bodyMedia] = firstMedia(op.requestBody?.content);
  const body = exampleOf(bodyMedia);
  if (body !== undefined && bodyType === 'application/json') {
    lines.push('-H "Content-Type: application/json"', `-d ${shellQuote(JSON.stringify(body))}`);
  } else if (typeof body === 'string') {
    // A body that is not JSON (a CSV import): sent as it is.
    lines.push(`-H "Content-Type: ${bodyType}"`, `--data-binary ${shellQuote(body)}`);
  }
  return `\`\`\`sh\n${lines.join(' \\\n  ')}\n\`\`\``;
}

/** A query parameter's own example (not its default), shown after its description. */
function queryExample(p: Parameter): string {
  if (p.in !== 'query') return '';
  const value = p.example ?? p.schema?.example ?? p.schema?.examples?.[0];
  return value === undefined ? '' : ` Example: \`${String(value)}\`.`;
}

function parameters(op: Operation): string[] {
  const list = (op.parameters ?? []).filter((p) => p.in === 'path' || p.in === 'query');
  if (list.length === 0) return [];
  return [
    '| parameter | in | type | description |',
    '| --- | --- | --- | --- |',
    ...list.map(
      (p) =>
        `| \`${p.name}\` | ${p.in}${p.required ? ', required' : ''} | ${cell(typeOf(p.schema))} | ${cell(
          (p.description ?? p.schema?.description ?? '') + queryExample(p),
        )} |`,
    ),
    '',
  ];
}

function answers(op: Operation): string[] {
  const out: string[] = [];
  for (const [status, response] of Object.entries(op.responses ?? {}).sort(([a], [b]) =>
    a.localeCompare(b),
  )) {
    const [type, media] = firstMedia(response.content);
    out.push(
      `- **${status}** — ${cell(response.description)}${type && type !== 'application/json' ? ` (\`${type}\`)` : ''}`,
    );
    const example = exampleOf(media);
    if (typeof example === 'string') {
      // A body that is not JSON (CSV, HTML): shown as it is sent.
      out.push('', `\`\`\`text\n${example}\n\`\`\``.replace(/^/gm, '  '), '');
    } else if (example !== undefined) out.push('', json(example).replace(/^/gm, '  '), '');
  }
  return out;
}

function operation(method: string, path: string, op: Operation): string[] {
  return [
    `### \`${method.toUpperCase()} ${path}\` — ${op.summary ?? ''}`,
    '',
    ...(op.description ? [op.description, ''] : []),
    `**Credential:** ${op[CREDENTIAL_EXTENSION] ?? 'none.'}`,
    '',
    ...parameters(op),
    '**Example request**',
    '',
    curl(method, path, op),
    '',
    '**Answers**',
    '',
    ...answers(op),
    '',
  ];
}

/**
 * `POST /events` belongs to the ingest service (the sending pipeline's door, not the query API),
 * so it is not in the query API's OpenAPI document; it is written here, beside the generated part.
 */
export const INGEST_EXAMPLE = {
  events: [
    {
      id: 'ev-1',
      type: 'email.queued',
      tenantId: 'acme',
      emailId: 'em_1',
      occurredAt: '2026-06-15T12:00:00Z',
      data: {
        toEmail: 'ada@example.com',
        subject: 'Welcome',
        templateId: 'welcome',
        projectId: 'prj_4Hs9dK2mQ7wE1rT6yU3iO8pA',
      },
    },
    {
      id: 'ev-2',
      type: 'email.delivered',
      tenantId: 'acme',
      emailId: 'em_1',
      occurredAt: '2026-06-15T12:00:05Z',
    },
  ],
};

const INGEST_SECTION = [
  '## Ingest (delivery events)',
  '',
  '### `POST /events` — Append delivery events',
  '',
  'One event, or `{ "events": [...] }` with 1..1000 events (SPEC §5). The whole batch is validated first: any',
  'invalid event → 400 listing every index, and nothing is appended. `id` is the idempotency key (the same id',
  'twice counts once everywhere). Event types and their `data`: [`spec.md` §5](spec.md); `email.queued` may name',
  'a `projectId` (SPEC §16).',
  '',
  '**Credential:** the ingest token (`Authorization: Bearer $INGEST_TOKEN`), compared in constant time.',
  '',
  '**Example request**',
  '',
  '```sh',
  'curl -X POST "$TERN_URL/events" \\',
  '  -H "Authorization: Bearer $INGEST_TOKEN" \\',
  '  -H "Content-Type: application/json" \\',
  `  -d '${JSON.stringify(INGEST_EXAMPLE)}'`,
  '```',
  '',
  '**Answers**',
  '',
  '- **202** — every event is in the log. `position` is the id of the batch’s last event: read-your-writes below.',
  '',
  '  ```json',
  '  { "accepted": 2, "position": "ev-2" }',
  '  ```',
  '',
  '- **400** — invalid body or events; `issues` lists `{ index, path, message }`.',
  '',
  '  ```json',
  '  {',
  '    "statusCode": 400,',
  '    "error": "Bad Request",',
  '    "message": "Invalid events at index 1: events[1].data.bounceType: bounceType must be hard or soft",',
  '    "code": "INVALID_EVENTS",',
  '    "issues": [{ "index": 1, "path": "data.bounceType", "message": "bounceType must be hard or soft" }]',
  '  }',
  '  ```',
  '',
  '- **401** — no or wrong ingest token. **413** — body over 5 MiB. **503** — the event log is unavailable;',
  '  nothing was accepted, retry later.',
  '',
];

/** The reference app's OpenAPI document (`/docs/json`), the app closed again: what is rendered. */
export async function referenceDocument(): Promise<OpenApiDocument> {
  const app = await buildReferenceApp();
  try {
    return (await app.inject('/docs/json')).json();
  } finally {
    await app.close();
  }
}

/** The whole reference, deterministic for a given document. */
export function renderApiReference(doc: OpenApiDocument): string {
  const byTag = new Map<string, Array<[string, string, Operation]>>();
  for (const tag of doc.tags ?? []) byTag.set(tag.name, []);
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const method of METHOD_ORDER) {
      const op = ops[method];
      if (op === undefined) continue;
      const tag = op.tags?.[0] ?? 'Other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push([method, path, op]);
    }
  }
  const lines = [
    `# ${doc.info.title} reference`,
    '',
    '<!-- Generated from the OpenAPI document by `npm run docs:api` (services/api/src/api-reference.ts). Do not edit by hand. -->',
    '',
    'Every route with who may call it, an example request and an example of each answer. The same document is',
    'served live at `/docs` (browsable) and `/docs/json`. Conventions: [`architecture.md`](architecture.md);',
    'the contract: [`spec.md`](spec.md).',
    '',
    'Examples use `TERN_URL` (e.g. `http://127.0.0.1:3000`), `TERN_API_KEY` (a `tern_…` key) and `TERN_JWT` (a',
    'dashboard session). Every error answers `{ statusCode, error, message, code }` (SPEC §4); `code` is one of',
    '`ERROR_CODES` (`packages/contracts/src/errors.ts`):',
    '',
    '| status | codes |',
    '| --- | --- |',
    ...ERROR_STATUSES.map(
      (status) => `| ${status} | ${ERROR_CODES_BY_STATUS[status].map((c) => `\`${c}\``).join(', ')} |`,
    ),
    '',
    '## Read-your-writes',
    '',
    'Every accepted write answers `position` (SPEC §25): `POST /emails/send` (the id of the send’s `email.queued`),',
    '`/emails/batch` (each email’s own in `data`, and the batch’s), `POST /events` and SMTP submission (its `250',
    '2.0.0 OK: queued as <id> position=<position>`). A write of several events (a batch) answers the id of its last',
    'event on each partition of the event log it went to, joined by `,` (at most one per partition; one id on the',
    'Postgres-table log): each partition is projected in order, so those events projected means the whole write is.',
    '`GET /emails/:id` with `Tern-Consistent-With: <position>` waits up to 5 s until the read models include every',
    'event it lists, then answers; past the wait → 503 `NOT_CONSISTENT_YET` with `Retry-After: 1`, never a 404 for',
    'an email accepted before the position. A position is read with a key of the tenant whose events it names.',
    '',
    '## Routes',
    '',
  ];
  for (const [tag, ops] of byTag) {
    if (ops.length === 0) continue;
    lines.push(`- ${tag}: ${ops.map(([m, p]) => `\`${m.toUpperCase()} ${p}\``).join(', ')}`);
  }
  lines.push('- Ingest: `POST /events`');
  lines.push('');
  for (const [tag, ops] of byTag) {
    if (ops.length === 0) continue;
    const description = doc.tags?.find((t) => t.name === tag)?.description;
    lines.push(`## ${tag}`, '', ...(description ? [description, ''] : []));
    for (const [method, path, op] of ops) lines.push(...operation(method, path, op));
  }
  lines.push(...INGEST_SECTION);
  return `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}
