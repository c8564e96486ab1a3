import { analyticsPeriod, dayRange, rates, retentionCutoff, utcDay } from '@tern/domain';
import type { DayRangeParams } from '@tern/read-models';
import type { TemplateStore } from '@tern/templates';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { type AuthConfig, credentialOf } from '../credentials.js';
import { DASHBOARD_ONLY, TAGS } from '../openapi.js';
import { createReadMemo } from '../read-memo.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { AS_OF_HEADER, errors } from '../schemas.js';
import {
  analyticsQuerySchema,
  dailyResponseSchema,
  summaryResponseSchema,
  topTemplatesResponseSchema,
} from './schemas.js';

export const TOP_TEMPLATES_LIMIT = 10;

/**
 * The cohort's UTC day range (SPEC §6, §9): from the later of the period's first day and the
 * retention cut-off day, to today. Both bounds are whole days, so the day-granular rollup
 * answers exactly what the logs would show.
 */
export function cohortDays(
  at: Date,
  since: string,
  retentionDays: number,
): { fromDay: string; toDay: string } {
  // Both are 00:00 UTC instants: the later one is the first visible day.
  const from = Math.max(Date.parse(since), retentionCutoff(at, retentionDays).getTime());
  return { fromDay: utcDay(from), toDay: utcDay(at.getTime()) };
}

const analyticsErrors = {
  400: errors.badRequest('querystring.days: days must be an integer from 1 to 90'),
  401: errors.unauthorized,
  403: errors.forbiddenKind,
};

/** The options of an analytics route: a dashboard session, the period's query, `ok` or the errors. */
const analyticsRoute = <T extends z.ZodType>(
  doc: { operationId: string; summary: string; description: string },
  ok: T,
) => ({
  config: { auth: 'jwt' } satisfies AuthConfig,
  schema: {
    tags: [TAGS.analytics],
    ...doc,
    security: DASHBOARD_ONLY,
    querystring: analyticsQuerySchema,
    response: { 200: ok, ...analyticsErrors },
  },
});

/** What the plugin uses (built by `apiRoutes`). */
export type AnalyticsRouteDeps = Pick<ApiRouteDeps, 'analytics' | 'now' | 'readModel' | 'retentionDays'> & {
  templates: TemplateStore;
};

/** `/analytics/summary|daily|top-templates` (SPEC §6): dashboard sessions only, from ClickHouse. */
export const analyticsRoutes: FastifyPluginAsyncZod<AnalyticsRouteDeps> = async (app, deps) => {
  const memo = createReadMemo<unknown>({ maxEntries: 5000 });
  // Every field of the range is in the key: the whole tenant and each project are separate answers.
  const keyOf = (kind: string, r: DayRangeParams) =>
    `${kind}\u0000${r.tenantId}\u0000${r.fromDay}\u0000${r.toDay}\u0000${r.projectId ?? ''}`;

  /** Period, cohort range and freshness of one request; sets the freshness header. */
  async function prepare(
    tenantId: string,
    { days, projectId }: { days: number; projectId?: string | undefined },
    reply: FastifyReply,
  ) {
    const at = deps.now();
    const period = analyticsPeriod(at, days);
    const context = await deps.readModel.get(tenantId);
    if (context.asOf !== null) reply.header(AS_OF_HEADER, context.asOf.toISOString());
    const range: DayRangeParams = {
      tenantId,
      ...cohortDays(at, period.since, context.retentionOverride ?? deps.retentionDays),
      ...(projectId === undefined ? {} : { projectId }),
    };
    return { period, range, watermark: context.watermark };
  }

  app.get(
    '/analytics/summary',
    analyticsRoute(
      {
        operationId: 'getAnalyticsSummary',
        summary: 'Totals and rates',
        description:
          'Counts of the tenant’s emails created in the period (UTC: today − days + 1 at 00:00 until now) ' +
          'and not expired by retention, with open, click, bounce and complaint rates. `projectId` narrows to one ' +
          'project.',
      },
      summaryResponseSchema,
    ),
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const { period, range, watermark } = await prepare(tenantId, request.query, reply);
      const totals = await memo.get(keyOf('totals', range), watermark, () => deps.analytics.totals(range));
      return { period, totals, rates: rates(totals) };
    },
  );

  app.get(
    '/analytics/daily',
    analyticsRoute(
      {
        operationId: 'getAnalyticsDaily',
        summary: 'Daily buckets',
        description:
          'Exactly `days` buckets, oldest first and zero-filled, of the emails created each UTC day. ' +
          'The buckets add up to the summary totals of the same period.',
      },
      dailyResponseSchema,
    ),
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const { days } = request.query;
      const { period, range, watermark } = await prepare(tenantId, request.query, reply);
      const rows = await memo.get(keyOf('daily', range), watermark, () => deps.analytics.daily(range));
      const byDay = new Map(rows.map((r) => [r.day, r]));
      return {
        days,
        daily: dayRange(period.since, days).map((date) => {
          const row = byDay.get(date);
          return {
            date,
            sent: row?.sent ?? 0,
            opened: row?.opened ?? 0,
            clicked: row?.clicked ?? 0,
            bounced: row?.bounced ?? 0,
          };
        }),
      };
    },
  );

  app.get(
    '/analytics/top-templates',
    analyticsRoute(
      {
        operationId: 'getTopTemplates',
        summary: 'Top templates',
        description:
          'Up to 10 templates of the period’s emails, by sent desc then id asc. Name and subject come from ' +
          'the tenant’s templates; an unknown template has its id as name and an empty subject.',
      },
      topTemplatesResponseSchema,
    ),
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const { range, watermark } = await prepare(tenantId, request.query, reply);
      const rows = await memo.get(keyOf('top', range), watermark, () =>
        deps.analytics.topTemplates({ ...range, limit: TOP_TEMPLATES_LIMIT }),
      );
      const names = await deps.templates.names(
        tenantId,
        rows.map((r) => r.template_id),
      );
      return {
        top: rows.map((r) => {
          const known = names.get(r.template_id);
          return {
            id: r.template_id,
            name: known?.name ?? r.template_id,
            subject: known?.subject ?? '',
            sent: r.sent,
            opened: r.opened,
            clicked: r.clicked,
          };
        }),
      };
    },
  );
};
