// The answers of `GET /analytics/breakdown` and `GET /analytics/deliverability` (SPEC §26),
// spelled out once, zod-free (see wire-mail.ts); their schemas are analytics.ts.

/** The dimensions of `GET /analytics/breakdown` (`by=`, and each one a filter). */
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

/** What became of sent mail: the counts a breakdown's row and a campaign's stats both carry. */
export interface MailOutcomes {
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
}

/** The counters of a breakdown row or of one point of its series. */
export interface AnalyticsCounts extends MailOutcomes {
  total: number;
  failed: number;
  delayed: number;
}

export interface BreakdownRow extends AnalyticsCounts {
  /** The dimension's value; '' = emails without one. */
  key: string;
  rates: {
    deliveryRate: number;
    openRate: number;
    clickRate: number;
    bounceRate: number;
    complaintRate: number;
  };
  /** With `interval`: one point per local hour or day, zero-filled; `start` is the UTC instant. */
  series?: BreakdownPoint[] | undefined;
}

/** One point of a row's series. */
export interface BreakdownPoint extends AnalyticsCounts {
  /** The start of the local hour or day, as a UTC instant. */
  start: string;
}

export interface AnalyticsPeriod {
  from: string;
  to: string;
  timeZone: string;
}

export interface Breakdown {
  /** The dimension of the rows (`by` of the query, an `AnalyticsDimension`). */
  by: string;
  interval: 'hour' | 'day' | null;
  period: AnalyticsPeriod;
  data: BreakdownRow[];
}

/** Rates and delivery times of one recipient mailbox provider. */
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
