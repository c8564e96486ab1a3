import { isInboundEvent, type LogEvent } from '@tern/contracts';
import {
  type EnabledEndpoint,
  enabledEndpoints,
  enqueueLiveDeliveries,
  type NewDelivery,
} from '@tern/webhooks';
import type pg from 'pg';
import type { DispatcherContext } from './context.js';

const matches = (endpoint: Pick<EnabledEndpoint, 'eventTypes'>, type: string) =>
  endpoint.eventTypes === null || endpoint.eventTypes.includes(type);

/** The endpoint and window of a replay: only its events, only for that endpoint. */
export interface ReplayScope {
  endpointId: string;
  replayId: string;
  since: Date;
  until: Date;
  tenantId: string;
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
  const rows = await enabledEndpoints(pool, tenants, only);
  const byTenant = new Map<string, EnabledEndpoint[]>();
  for (const r of rows) byTenant.set(r.tenantId, [...(byTenant.get(r.tenantId) ?? []), r]);
  const out: NewDelivery[] = [];
  for (const event of wanted) {
    for (const endpoint of byTenant.get(event.tenantId) ?? []) {
      // An inbound message a route acted on goes to the route's webhooks only (SPEC §24).
      const routed = isInboundEvent(event) ? event.data.webhooks : undefined;
      if (routed !== undefined ? routed.includes(endpoint.id) : matches(endpoint, event.type)) {
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

/**
 * Turns consumed events into deliveries (what the live consumer does with a batch): one statement,
 * the endpoints matched in it (issue 45), as `deliveriesFor` matches them for a replay.
 */
export async function enqueue(ctx: DispatcherContext, events: readonly LogEvent[]): Promise<number> {
  const made = await enqueueLiveDeliveries(ctx.pool, events, ctx.now());
  if (made > 0) ctx.wakeWorkers();
  return made;
}
