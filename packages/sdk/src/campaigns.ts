import type { Send } from './transport.js';
import type { ListMeta, RequestOptions } from './types.js';

/** Counts of a campaign's (or a sequence step's) emails, from the delivery log (SPEC §15). */
export interface MailStats {
  recipients: number;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
  unsubscribed: number;
}

export type CampaignStatus = 'draft' | 'scheduled' | 'sending' | 'sent' | 'cancelled';

/** A campaign (SPEC §15). */
export interface Campaign {
  id: string;
  name: string;
  from: string;
  /** The audience, or null when the campaign goes to a segment. */
  audience: string | null;
  /** The segment (SPEC §27) instead of an audience, evaluated once when it starts sending. */
  segment: string | null;
  /** Only this topic's subscribers get it; null: every subscribed contact. */
  topic: string | null;
  templateId: string | null;
  subject: string | null;
  html: string | null;
  text: string | null;
  status: CampaignStatus;
  scheduledAt: string | null;
  sentAt: string | null;
  /** The campaign's pace in emails per minute (SPEC §23), or null (as fast as the tenant's send rate allows). */
  sendRatePerMinute: number | null;
  createdAt: string;
  updatedAt: string;
  stats: MailStats;
}

/** A template of the tenant (`templateId`), or own `subject` with `html` and/or `text`. */
export interface CreateCampaignParams {
  name: string;
  /** `addr` or `Name <addr>`. */
  from: string;
  /** Give `audience` or `segment`. */
  audience?: string;
  segment?: string;
  topic?: string;
  templateId?: string;
  subject?: string;
  html?: string;
  text?: string;
  /** ISO 8601; the campaign waits as `scheduled` until then once sent. */
  scheduledAt?: string;
  /** At most this many of its emails handed to the provider per minute (SPEC §23). */
  sendRatePerMinute?: number;
}

/** Fields to change while draft; `null` clears an optional one. */
export type UpdateCampaignParams = {
  [K in keyof CreateCampaignParams]?: K extends 'name' | 'from' | 'audience' | 'segment'
    ? CreateCampaignParams[K]
    : CreateCampaignParams[K] | null;
};

export interface CampaignList {
  data: Campaign[];
  meta: ListMeta;
}

/** One UTC day of a campaign's emails: each counted once per kind, on the day of its first such event. */
export interface CampaignDay {
  date: string;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
}

export interface CampaignsApi {
  create(params: CreateCampaignParams, options?: RequestOptions): Promise<Campaign>;
  list(params?: { page?: number; limit?: number }, options?: RequestOptions): Promise<CampaignList>;
  get(id: string, options?: RequestOptions): Promise<Campaign>;
  update(id: string, params: UpdateCampaignParams, options?: RequestOptions): Promise<Campaign>;
  remove(id: string, options?: RequestOptions): Promise<void>;
  /** Starts the fan-out (or schedules it): `{ id, status: 'sending' | 'scheduled' }`. */
  send(id: string, options?: RequestOptions): Promise<{ id: string; status: CampaignStatus }>;
  cancel(id: string, options?: RequestOptions): Promise<{ id: string; status: CampaignStatus }>;
  /** The campaign's emails per UTC day over the last `days` (1..90, default 30), oldest first. */
  daily(
    id: string,
    params?: { days?: number },
    options?: RequestOptions,
  ): Promise<{ days: number; daily: CampaignDay[] }>;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isCampaign = (value: unknown): value is Campaign =>
  isRecord(value) &&
  typeof value.id === 'string' &&
  typeof value.status === 'string' &&
  isRecord(value.stats);
const isCampaignList = (value: unknown): value is CampaignList =>
  isRecord(value) && Array.isArray(value.data) && isRecord(value.meta) && value.data.every(isCampaign);
const isStatus = (value: unknown): value is { id: string; status: CampaignStatus } =>
  isRecord(value) && typeof value.id === 'string' && typeof value.status === 'string';

const isDaily = (value: unknown): value is { days: number; daily: CampaignDay[] } =>
  isRecord(value) && typeof value.days === 'number' && Array.isArray(value.daily);

const path = (id: string) => `/campaigns/${encodeURIComponent(id)}`;

export function createCampaignsApi(send: Send): CampaignsApi {
  return {
    create: (params, options = {}) =>
      send(
        '/campaigns',
        {},
        { method: 'POST', body: JSON.stringify(params), read: 'json', check: isCampaign },
        options,
      ),
    list: (params = {}, options = {}) =>
      send(
        '/campaigns',
        { page: params.page, limit: params.limit },
        { method: 'GET', read: 'json', check: isCampaignList },
        options,
      ),
    get: (id, options = {}) =>
      send(path(id), {}, { method: 'GET', read: 'json', check: isCampaign }, options),
    update: (id, params, options = {}) =>
      send(
        path(id),
        {},
        { method: 'PATCH', body: JSON.stringify(params), read: 'json', check: isCampaign },
        options,
      ),
    remove: (id, options = {}) => send<void>(path(id), {}, { method: 'DELETE', read: 'none' }, options),
    send: (id, options = {}) =>
      send(`${path(id)}/send`, {}, { method: 'POST', read: 'json', check: isStatus }, options),
    cancel: (id, options = {}) =>
      send(`${path(id)}/cancel`, {}, { method: 'POST', read: 'json', check: isStatus }, options),
    daily: (id, params = {}, options = {}) =>
      send(
        `${path(id)}/daily`,
        { days: params.days },
        { method: 'GET', read: 'json', check: isDaily },
        options,
      ),
  };
}
