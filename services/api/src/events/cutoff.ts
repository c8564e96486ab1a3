import { retentionCutoff } from '@tern/domain';
import { httpError } from '@tern/http';
import type { ApiRouteDeps } from '../route-deps.js';
import { errorResponse } from '../schemas.js';

/**
 * Where a tenant's event stream starts now (SPEC §25): the later of its retention cut-off and
 * `EVENT_STREAM_DAYS` ago. `GET /events`, `/events/stream` and the webhook replay from a cursor
 * answer 410 for a cursor before it.
 */
export async function eventStreamCutoff(
  deps: Pick<ApiRouteDeps, 'now' | 'readModel' | 'retentionDays' | 'eventStreamDays'>,
  tenantId: string,
): Promise<Date> {
  const at = deps.now();
  const context = await deps.readModel.get(tenantId);
  const retention = retentionCutoff(at, context.retentionOverride ?? deps.retentionDays);
  const stream = new Date(at.getTime() - deps.eventStreamDays * 86_400_000);
  return retention > stream ? retention : stream;
}

/** The 410 of a cursor before the stream's start (`CURSOR_EXPIRED`), and its OpenAPI answer. */
export const cursorExpired = () =>
  httpError(
    410,
    'This cursor is older than the event stream keeps (EVENT_STREAM_DAYS); list from the start',
    { code: 'CURSOR_EXPIRED' },
  );
export const cursorGone = errorResponse(
  410,
  'The cursor is older than the stream keeps (EVENT_STREAM_DAYS or the tenant’s retention).',
  'This cursor is older than the event stream keeps (EVENT_STREAM_DAYS); list from the start',
);
