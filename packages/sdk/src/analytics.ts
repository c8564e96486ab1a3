import type { AnalyticsDimension, Breakdown, Deliverability } from '@tern/contracts/wire';
import type { Send } from './transport.js';
import type { RequestOptions } from './types.js';

export type {
  AnalyticsCounts,
  AnalyticsDimension,
  AnalyticsPeriod,
  Breakdown,
  BreakdownRow,
  Deliverability,
  ProviderDeliverability,
} from '@tern/contracts/wire';

/** A period (`days`, or `from`/`to` local dates) and any filters (`{ provider: 'gmail', tag: 'receipt' }`). */
export interface AnalyticsRangeParams extends Partial<Record<AnalyticsDimension, string>> {
  days?: number;
  from?: string;
  to?: string;
}

export interface BreakdownParams extends AnalyticsRangeParams {
  by: AnalyticsDimension;
  interval?: 'hour' | 'day';
  limit?: number;
}

/** Sliceable analytics (key scope `analytics:read`). */
export interface AnalyticsApi {
  /** `GET /analytics/breakdown`: rows of one dimension under any filters, with an optional series. */
  breakdown(params: BreakdownParams, options?: RequestOptions): Promise<Breakdown>;
  /** `GET /analytics/deliverability`: rates and delivery times per recipient mailbox provider. */
  deliverability(params?: AnalyticsRangeParams, options?: RequestOptions): Promise<Deliverability>;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isBreakdown = (v: unknown): v is Breakdown =>
  isRecord(v) && Array.isArray(v.data) && isRecord(v.period);
const isDeliverability = (v: unknown): v is Deliverability =>
  isRecord(v) && Array.isArray(v.providers) && isRecord(v.period);

export function createAnalyticsApi(send: Send): AnalyticsApi {
  return {
    breakdown: (params, options = {}) =>
      send(
        '/analytics/breakdown',
        { ...params },
        { method: 'GET', read: 'json', check: isBreakdown },
        options,
      ),
    deliverability: (params = {}, options = {}) =>
      send(
        '/analytics/deliverability',
        { ...params },
        { method: 'GET', read: 'json', check: isDeliverability },
        options,
      ),
  };
}
