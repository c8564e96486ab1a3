import { addDays, localDay, localMidnight, rate, rates, retentionCutoff, utcDay } from '@tern/domain';
import { BREAKDOWN_COUNTERS, type BreakdownCounters, DIMENSIONS, type Dimension } from '@tern/read-models';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { boundProject, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors } from '../schemas.js';
import {
  breakdownQuerySchema,
  breakdownResponseSchema,
  deliverabilityQuerySchema,
  deliverabilityResponseSchema,
} from './breakdown-schemas.js';

const HOUR_MS = 3_600_000;

const routeErrors = {
  400: errors.badRequest('querystring.by: by must be one of tag, template, project, …'),
  401: errors.unauthorized,
  403: errors.forbiddenScope,
};

type RangeQuery = { days: number; from?: string | undefined; to?: string | undefined } & Partial<
  Record<Dimension, string | undefined>
>;

const zero = (): BreakdownCounters =>
  Object.fromEntries(BREAKDOWN_COUNTERS.map((c) => [c, 0])) as BreakdownCounters;
const countersOf = (r: BreakdownCounters): BreakdownCounters =>
  Object.fromEntries(BREAKDOWN_COUNTERS.map((c) => [c, r[c]])) as BreakdownCounters;

/** What the plugin uses (built by `apiRoutes`). */
export type BreakdownRouteDeps = Pick<
  ApiRouteDeps,
  'breakdown' | 'now' | 'readModel' | 'retentionDays' | 'tenantSettings'
>;

/**
 * `/analytics/breakdown` and `/analytics/deliverability` (SPEC §26): the sliceable rollup, in the
 * tenant's time zone; a dashboard JWT or an API key with `analytics:read` (a key bound to a
 * project sees that project only).
 */
export const breakdownRoutes: FastifyPluginAsyncZod<BreakdownRouteDeps> = async (app, deps) => {
  /** The tenant's local day range, cut at retention, and its filters (a bound key's project forced). */
  async function rangeOf(tenantId: string, bound: string | null, q: RangeQuery) {
    const timeZone = (await deps.tenantSettings.getTimeZone(tenantId)) ?? 'UTC';
    const now = deps.now().getTime();
    const today = localDay(now, timeZone);
    let fromDay = q.from ?? addDays(today, -(q.days - 1));
    const toDay = q.to ?? today;
    const context = await deps.readModel.get(tenantId);
    const cutoffDay = utcDay(
      retentionCutoff(deps.now(), context.retentionOverride ?? deps.retentionDays).getTime(),
    );
    if (fromDay < cutoffDay) fromDay = cutoffDay;
    const filters: Partial<Record<Dimension, string>> = {};
    for (const d of DIMENSIONS) if (q[d] !== undefined) filters[d] = q[d];
    // A key bound to a project asks within it: another project's filter matches nothing.
    const foreign = bound !== null && filters.project !== undefined && filters.project !== bound;
    if (bound !== null) filters.project = bound;
    return {
      timeZone,
      fromDay,
      // biome-ignore lint/complexity/useMathMinMax: ISO day strings, compared as text
      toDay: toDay < fromDay ? fromDay : toDay,
      filters,
      empty: foreign || toDay < fromDay,
    };
  }

  app.get(
    '/analytics/breakdown',
    {
      config: { auth: 'jwt_or_key', scope: 'analytics:read' },
      schema: {
        tags: [TAGS.analytics],
        operationId: 'getAnalyticsBreakdown',
        summary: 'Breakdown by a dimension',
        description:
          'The period’s emails (by the day they were created, in the tenant’s `timeZone`) grouped by one dimension: ' +
          '`tag`, `template`, `project`, `campaign`, `domain` (sending domain), `provider` (recipient mailbox provider), ' +
          '`client` and `device` (of the first human open or click), `bounce` (bounce category). Any dimension is also a ' +
          'filter (`?provider=gmail&tag=receipt`); filters combine. `interval=hour|day` adds a zero-filled series per ' +
          'row. `days` (1–90, default 30, today included) or `from`/`to` (local dates). API key with `analytics:read`, ' +
          'or a dashboard JWT.\n\nExample: `GET /analytics/breakdown?by=provider&days=7&tag=receipt&interval=day`.',
        security: KEY_OR_DASHBOARD,
        querystring: breakdownQuerySchema,
        response: { 200: breakdownResponseSchema, ...routeErrors },
      },
    },
    async (request) => {
      const credential = credentialOf(request);
      const q = request.query;
      const r = await rangeOf(credential.tenantId, boundProject(credential), q);
      const period = { from: r.fromDay, to: r.toDay, timeZone: r.timeZone };
      const interval = q.interval ?? null;
      if (r.empty) return { by: q.by, interval, period, data: [] };
      const answer = await deps.breakdown.breakdown({
        tenantId: credential.tenantId,
        fromDay: r.fromDay,
        toDay: r.toDay,
        timeZone: r.timeZone,
        by: q.by,
        filters: r.filters,
        ...(q.interval ? { interval: q.interval } : {}),
        limit: q.limit,
      });
      const starts = interval === null ? [] : periodStarts(r.fromDay, r.toDay, r.timeZone, interval);
      const seriesOf = (key: string) => {
        const points = new Map(answer.series.filter((p) => p.key === key).map((p) => [p.start * 1000, p]));
        return starts.map((ms) => {
          const p = points.get(ms);
          return { start: new Date(ms).toISOString(), ...(p ? countersOf(p) : zero()) };
        });
      };
      return {
        by: q.by,
        interval,
        period,
        data: answer.rows.map((row) => ({
          key: row.key,
          ...countersOf(row),
          rates: { deliveryRate: rate(row.delivered, row.sent), ...rates(row) },
          ...(interval === null ? {} : { series: seriesOf(row.key) }),
        })),
      };
    },
  );

  app.get(
    '/analytics/deliverability',
    {
      config: { auth: 'jwt_or_key', scope: 'analytics:read' },
      schema: {
        tags: [TAGS.analytics],
        operationId: 'getAnalyticsDeliverability',
        summary: 'Deliverability per mailbox provider',
        description:
          'Per recipient mailbox provider, over the period (days or from/to, in the tenant’s `timeZone`; the same ' +
          'filters as the breakdown): delivery, bounce, complaint and deferral rates, and the median and 95th ' +
          'percentile of the seconds from sent to delivered. API key with `analytics:read`, or a dashboard JWT.',
        security: KEY_OR_DASHBOARD,
        querystring: deliverabilityQuerySchema,
        response: { 200: deliverabilityResponseSchema, ...routeErrors },
      },
    },
    async (request) => {
      const credential = credentialOf(request);
      const r = await rangeOf(credential.tenantId, boundProject(credential), request.query);
      const period = { from: r.fromDay, to: r.toDay, timeZone: r.timeZone };
      if (r.empty) return { period, providers: [] };
      const rows = await deps.breakdown.deliverability({
        tenantId: credential.tenantId,
        fromDay: r.fromDay,
        toDay: r.toDay,
        timeZone: r.timeZone,
        filters: r.filters,
      });
      return {
        period,
        providers: rows.map((p) => ({
          provider: p.provider,
          total: p.total,
          sent: p.sent,
          delivered: p.delivered,
          bounced: p.bounced,
          complained: p.complained,
          delayed: p.delayed,
          deliveryRate: rate(p.delivered, p.sent),
          bounceRate: rate(p.bounced, p.total),
          complaintRate: rate(p.complained, p.sent),
          deferralRate: rate(p.delayed, p.total),
          medianDeliverySeconds: p.median_seconds,
          p95DeliverySeconds: p.p95_seconds,
        })),
      };
    },
  );
};

/** The instants each local hour or day of [fromDay, toDay] starts, oldest first. */
export function periodStarts(
  fromDay: string,
  toDay: string,
  timeZone: string,
  interval: 'hour' | 'day',
): number[] {
  const out: number[] = [];
  if (interval === 'day') {
    for (let d = fromDay; d <= toDay; d = addDays(d, 1)) out.push(localMidnight(d, timeZone));
    return out;
  }
  const end = localMidnight(addDays(toDay, 1), timeZone);
  // Local hours start on whole UTC quarter hours; the first is local midnight.
  for (let ms = localMidnight(fromDay, timeZone); ms < end; ms += HOUR_MS) out.push(ms);
  return out;
}
