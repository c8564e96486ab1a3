import { type LogEvent, logEventKey } from '@tern/contracts';
import type pg from 'pg';
import type { DispatcherContext } from './context.js';

interface EndpointFilter {
  tenant_id: string;
  id: string;
  event_types: string[] | null;
}

const matches = (endpoint: Pick<EndpointFilter, 'event_types'>, type: string) =>
  endpoint.event_types === null || endpoint.event_types.includes(type);

export interface NewDelivery {
  tenantId: string;
  endpointId: string;
  event: LogEvent;
  replayId: string;
}

/** The endpoint and window of a replay: only its events, only for that endpoint. */
export interface ReplayScope {
  endpointId: string;
  replayId: string;
  since: Date;
  until: Date;
  tenantId: string;
}

/** Inserts deliveries; the unique (endpoint, event, replay) key makes a re-read a no-op. */
export async function insertDeliveries(
  db: Pick<pg.Pool, 'query'>,
  rows: readonly NewDelivery[],
  now: Date,
): Promise<number> {
  if (rows.length === 0) return 0;
  const result = await db.query(
    `INSERT INTO webhook_deliveries
       (tenant_id, endpoint_id, event_id, event_type, email_id, replay_id, event, next_attempt_at, created_at, updated_at)
     SELECT t, e, ev, ty, em, r, j::jsonb, $8, $8, $8
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
       AS u(t, e, ev, ty, em, r, j)
     ON CONFLICT (endpoint_id, event_id, replay_id) DO NOTHING`,
    [
      rows.map((r) => r.tenantId),
      rows.map((r) => r.endpointId),
      rows.map((r) => r.event.id),
      rows.map((r) => r.event.type),
      // An email's id, or a domain's for domain events (the subject the event is about).
      rows.map((r) => logEventKey(r.event)),
      rows.map((r) => r.replayId),
      rows.map((r) => JSON.stringify(r.event)),
      now,
    ],
  );
  return result.rowCount ?? 0;
}

/** Deliveries of the events for the tenant's endpoints (or one endpoint, for a replay). */
export async function deliveriesFor(
  pool: Pick<pg.Pool, 'query'>,
  events: readonly LogEvent[],
  only?: ReplayScope,
): Promise<NewDelivery[]> {
  const wanted = only
    ? events.filter((e) => {
        const at = Date.parse(e.occurredAt);
        return e.tenantId === only.tenantId && at >= only.since.getTime() && at < only.until.getTime();
      })
    : events;
  if (wanted.length === 0) return [];
  const tenants = [...new Set(wanted.map((e) => e.tenantId))];
  const { rows } = only
    ? await pool.query<EndpointFilter>(
        'SELECT tenant_id, id, event_types FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2 AND enabled',
        [only.tenantId, only.endpointId],
      )
    : await pool.query<EndpointFilter>(
        'SELECT tenant_id, id, event_types FROM webhook_endpoints WHERE tenant_id = ANY($1) AND enabled',
        [tenants],
      );
  const byTenant = new Map<string, EndpointFilter[]>();
  for (const r of rows) byTenant.set(r.tenant_id, [...(byTenant.get(r.tenant_id) ?? []), r]);
  const out: NewDelivery[] = [];
  for (const event of wanted) {
    for (const endpoint of byTenant.get(event.tenantId) ?? []) {
      if (matches(endpoint, event.type)) {
        out.push({
          tenantId: event.tenantId,
          endpointId: endpoint.id,
          event,
          replayId: only?.replayId ?? '',
        });
      }
    }
  }
  return out;
}

/** Turns consumed events into deliveries (what the live consumer does with a batch). */
export async function enqueue(ctx: DispatcherContext, events: readonly LogEvent[]): Promise<number> {
  const made = await insertDeliveries(ctx.pool, await deliveriesFor(ctx.pool, events), ctx.now());
  if (made > 0) ctx.wakeWorkers();
  return made;
}
