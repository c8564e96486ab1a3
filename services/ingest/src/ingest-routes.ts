import { timingSafeEqualStr } from '@tern/auth';
import {
  type DeliveryEvent,
  EVENT_TYPES,
  logEventKey,
  MAX_EVENTS_PER_REQUEST,
  validateEvents,
} from '@tern/contracts';
import { type EventStream, positionOfWrite } from '@tern/event-log';
import { appendOr503, httpError } from '@tern/http';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';

/** Largest accepted `POST /events` body: 1000 events of up to ~5 KiB each. Larger → 413. */
export const INGEST_BODY_LIMIT = 5 * 1024 * 1024;

export interface IngestRoutesOptions {
  log: EventStream;
  ingestToken: string;
  /** Called after the log acknowledged a batch (metrics). */
  onAccepted?: (count: number) => void;
}

/** The OpenAPI tag of `POST /events`. */
export const INGEST_TAG = 'Ingest';

// The document of `POST /events` (issue 24 item 14). Only documentation: the body is checked by
// `validateEvents` as a whole (every index listed), not by these schemas.
const eventDoc = z
  .object({
    id: z.string().meta({ description: 'Idempotency key: the same id twice counts once everywhere.' }),
    type: z.enum(EVENT_TYPES),
    tenantId: z.string(),
    emailId: z.string(),
    occurredAt: z.string().meta({ format: 'date-time' }),
    data: z.record(z.string(), z.unknown()).optional().meta({ description: 'Fields of the type (SPEC §5).' }),
  })
  .meta({ description: 'One delivery event.' });
const ingestBodyDoc = z
  .union([eventDoc, z.object({ events: z.array(eventDoc).min(1).max(MAX_EVENTS_PER_REQUEST) })])
  .meta({
    description: `One event, or \`{ "events": [...] }\` with 1..${MAX_EVENTS_PER_REQUEST} events.`,
    example: {
      events: [
        {
          id: 'ev-1',
          type: 'email.delivered',
          tenantId: 'acme',
          emailId: 'em_1',
          occurredAt: '2026-06-15T12:00:05Z',
        },
      ],
    },
  });
const errorDoc = (statusCode: number, description: string, message: string) =>
  z
    .object({
      statusCode: z.number().int(),
      error: z.string(),
      message: z.string(),
      code: z.string().optional(),
    })
    .meta({ description, example: { statusCode, error: 'Error', message } });

/** How many issues a 400 lists before it says "and N more". */
const MAX_LISTED_ISSUES = 20;

/**
 * `POST /events` (SPEC §5): ingest token, one event or `{ events: [...] }`, the whole batch
 * validated before anything is appended, 202 only once the log acknowledged every event.
 */
export const ingestRoutes: FastifyPluginAsync<IngestRoutesOptions> = async (app, opts) => {
  app.post(
    '/events',
    {
      bodyLimit: INGEST_BODY_LIMIT,
      schema: {
        tags: [INGEST_TAG],
        operationId: 'appendEvents',
        summary: 'Append delivery events',
        description:
          'The sending pipeline posts delivery events (SPEC §5). The whole batch is validated first: any invalid ' +
          'event → 400 listing every index, and nothing is appended; 202 once the log acknowledged every event, with ' +
          '`position` (the last event on each partition of the log) for a read-your-writes `Tern-Consistent-With` header.',
        security: [{ ingestToken: [] }],
        body: ingestBodyDoc,
        response: {
          202: z
            .object({
              accepted: z.number().int(),
              position: z.string().meta({
                description:
                  'Read-your-writes (SPEC §25): the id of the batch’s last event on each partition of the log, ' +
                  'partitions ascending, joined by `,` (one id for one event, and on the Postgres-table log). Send it ' +
                  'as `Tern-Consistent-With` on `GET /emails/:id` (with a key of those events’ tenant) to read once ' +
                  'every event of the batch is projected.',
                example: 'ev-7,ev-9',
              }),
            })
            .meta({ description: 'Every event is in the log.' }),
          400: errorDoc(
            400,
            'Invalid body or events; `issues` lists `{ index, path, message }`.',
            'Invalid events at index 0: …',
          ),
          401: errorDoc(
            401,
            'Missing or wrong ingest token (checked before the body is read).',
            'Invalid ingest token',
          ),
          413: errorDoc(413, 'The body is larger than 5 MiB.', 'Request body is too large'),
          503: errorDoc(
            503,
            'The event log is unavailable: nothing was accepted, retry later.',
            'Event log unavailable: nothing was accepted, retry later',
          ),
        },
      },
      // Documentation only: the handler validates the batch itself and answers what it built.
      validatorCompiler: () => () => true,
      serializerCompiler: () => (data) => JSON.stringify(data),
      // The token is checked before the body is read or parsed (issue 9, item 4): an
      // unauthenticated sender costs a header comparison, never a 5 MiB JSON parse.
      onRequest: async (request) => authenticate(request.headers.authorization, opts.ingestToken),
    },
    async (request, reply) => {
      const raw = eventsOf(request.body);
      const result = validateEvents(raw);
      if (!result.ok) {
        const allIndexes = [...new Set(result.issues.map((i) => i.index))];
        const indexes =
          allIndexes.length > MAX_LISTED_ISSUES
            ? [...allIndexes.slice(0, MAX_LISTED_ISSUES), `… (${allIndexes.length} events in all)`]
            : allIndexes;
        const listed = result.issues
          .slice(0, MAX_LISTED_ISSUES)
          .map((i) => `events[${i.index}]${i.path ? `.${i.path}` : ''}: ${i.message}`);
        const more = result.issues.length - listed.length;
        throw httpError(
          400,
          `Invalid events at index ${indexes.join(', ')}: ${listed.join('; ')}${more > 0 ? `; and ${more} more` : ''}`,
          {
            code: 'INVALID_EVENTS',
            // Capped: a 5 MiB batch of bad events must not answer with a larger body.
            issues: result.issues.slice(0, MAX_LISTED_ISSUES),
            issuesTotal: result.issues.length,
          },
        );
      }
      await append(opts.log, result.events);
      opts.onAccepted?.(result.events.length);
      // Read-your-writes (SPEC §25): the last event's id on each partition the batch went to, the
      // ids the API's `Tern-Consistent-With` check looks up in the event stream.
      const position = await appendOr503(
        () =>
          positionOfWrite(
            opts.log,
            result.events.map((e) => ({ id: e.id, key: logEventKey(e) })),
          ),
        'accepted',
      );
      return reply.status(202).send({ accepted: result.events.length, position });
    },
  );
};

function authenticate(header: string | undefined, token: string): void {
  // RFC 7235: the scheme is case-insensitive (`bearer`, `BEARER` are the same).
  const presented = header === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
  if (!presented)
    throw httpError(401, 'Missing ingest token: send Authorization: Bearer <INGEST_TOKEN>', {
      code: 'MISSING_CREDENTIAL',
    });
  if (!timingSafeEqualStr(presented, token))
    throw httpError(401, 'Invalid ingest token', { code: 'INVALID_CREDENTIAL' });
}

/** The body is one event, or `{ events: [...] }` with 1..1000 events. */
function eventsOf(body: unknown): unknown[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw httpError(400, 'Body must be one event object or { "events": [...] }', { code: 'INVALID_EVENTS' });
  }
  if (!('events' in body)) return [body];
  const { events } = body as { events: unknown };
  if (!Array.isArray(events)) throw httpError(400, 'events must be an array', { code: 'INVALID_EVENTS' });
  if (events.length === 0)
    throw httpError(400, 'events must contain at least 1 event', { code: 'INVALID_EVENTS' });
  if (events.length > MAX_EVENTS_PER_REQUEST) {
    throw httpError(
      400,
      `events must contain at most ${MAX_EVENTS_PER_REQUEST} events (got ${events.length})`,
      { code: 'INVALID_EVENTS' },
    );
  }
  if (Object.keys(body).length > 1)
    throw httpError(400, 'Body { events } must have no other field', { code: 'INVALID_EVENTS' });
  return events;
}

function append(log: EventStream, events: DeliveryEvent[]): Promise<void> {
  return appendOr503(() => log.append(events), 'accepted');
}
