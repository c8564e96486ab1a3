import type { Campaign, CampaignDay, CampaignStatus, List } from '@tern/contracts/wire';
import { isList, isRecord, itemPath, json, type ResourceApi, resourceCalls } from './resource.js';
import type { Send } from './transport.js';
import type { RequestOptions } from './types.js';

export type { Campaign, CampaignDay, CampaignStatus, MailStats } from '@tern/contracts/wire';

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

export type CampaignList = List<Campaign>;

export interface CampaignsApi extends ResourceApi<Campaign, CreateCampaignParams, UpdateCampaignParams> {
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

const isCampaign = (value: unknown): value is Campaign =>
  isRecord(value) &&
  typeof value.id === 'string' &&
  typeof value.status === 'string' &&
  isRecord(value.stats);
const isStatus = (value: unknown): value is { id: string; status: CampaignStatus } =>
  isRecord(value) && typeof value.id === 'string' && typeof value.status === 'string';

const isDaily = (value: unknown): value is { days: number; daily: CampaignDay[] } =>
  isRecord(value) && typeof value.days === 'number' && Array.isArray(value.daily);

export function createCampaignsApi(send: Send): CampaignsApi {
  const path = itemPath('/campaigns');
  return {
    ...resourceCalls(send, '/campaigns', isCampaign, isList(isCampaign)),
    send: (id, options = {}) => send(`${path(id)}/send`, {}, { ...json('POST'), check: isStatus }, options),
    cancel: (id, options = {}) =>
      send(`${path(id)}/cancel`, {}, { ...json('POST'), check: isStatus }, options),
    daily: (id, params = {}, options = {}) =>
      send(`${path(id)}/daily`, { days: params.days }, { ...json('GET'), check: isDaily }, options),
  };
}
