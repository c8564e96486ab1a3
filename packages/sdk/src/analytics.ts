import type { Send } from './transport.js';
import type { RequestOptions } from './types.js';

/** The dimensions of `GET /analytics/breakdown` (SPEC §26). */
export type AnalyticsDimension =
  | 'tag'
  | 'template'
  | 'project'
  | 'campaign'
  | 'domain'
  | 'provider'
  | 'client'
  | 'device'
  | 'bounce';

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

export interface AnalyticsCounts {
  total: number;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
  failed: number;
  delayed: number;
}

export interface BreakdownRow extends AnalyticsCounts {
  key: string;
  rates: {
    deliveryRate: number;
    openRate: number;
    clickRate: number;
    bounceRate: number;
    complaintRate: number;
  };
  series?: (AnalyticsCounts & { start: string })[];
}

export interface AnalyticsPeriod {
  from: string;
  to: string;
  timeZone: string;
}

export interface Breakdown {
  by: string;
  interval: 'hour' | 'day' | null;
  period: AnalyticsPeriod;
  data: BreakdownRow[];
}

export interface ProviderDeliverability {
  provider: string;
  total: number;
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
  delayed: number;
  deliveryRate: number;
  bounceRate: number;
  complaintRate: number;
  deferralRate: number;
  medianDeliverySeconds: number | null;
  p95DeliverySeconds: number | null;
}

export interface Deliverability {
  period: AnalyticsPeriod;
  providers: ProviderDeliverability[];
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
