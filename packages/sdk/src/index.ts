export { init, type TernClient } from './client.js';
export type { FetchLike, TernOptions } from './config.js';
export { API_KEY_ENV, BASE_URL_ENV, DEFAULT_BASE_URL } from './constants.js';
export {
  isTernApiError,
  TernApiError,
  type TernApiErrorInit,
  TernConfigError,
  type TernErrorCode,
  TernTimeoutError,
} from './errors.js';
export type {
  EmailLogEntry,
  EmailStatus,
  GetLogsParams,
  IterateLogsParams,
  LogsMeta,
  LogsResponse,
  RequestOptions,
} from './types.js';
export { type VerifyWebhookOptions, verifyWebhook, WebhookVerificationError } from './verify-webhook.js';
export type {
  CreateWebhookParams,
  ListMeta,
  Page,
  UpdateWebhookParams,
  WebhookAttempt,
  WebhookDelivery,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookEventType,
  WebhookReplay,
  WebhooksApi,
} from './webhooks.js';
