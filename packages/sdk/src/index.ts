// The answers of `/webhooks*` and `/inbound*`: the contracts' wire types (see types.ts), under their own names.
export type {
  InboundAttachment,
  InboundAuth,
  InboundList,
  InboundMessage,
  InboundSummary,
  InboundVerdict,
  WebhookAttempt,
  WebhookDelivery,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookEventType,
  WebhookReplay,
} from '@tern/contracts/wire';
export type {
  AnalyticsApi,
  AnalyticsCounts,
  AnalyticsDimension,
  AnalyticsPeriod,
  AnalyticsRangeParams,
  Breakdown,
  BreakdownParams,
  BreakdownRow,
  Deliverability,
  ProviderDeliverability,
} from './analytics.js';
export type {
  ContactPropertiesApi,
  ContactProperty,
  ContactPropertyType,
  CreateTopicParams,
  Segment,
  SegmentFilter,
  SegmentsApi,
  Topic,
  TopicsApi,
} from './audiences.js';
export type {
  Automation,
  AutomationFilter,
  AutomationList,
  AutomationRun,
  AutomationRunList,
  AutomationStep,
  AutomationsApi,
  CreateAutomationParams,
  TrackEventParams,
  TrackedEvent,
  UpdateAutomationParams,
} from './automations.js';
export type {
  Campaign,
  CampaignDay,
  CampaignList,
  CampaignStatus,
  CampaignsApi,
  CreateCampaignParams,
  MailStats,
  UpdateCampaignParams,
} from './campaigns.js';
export { init, type TernClient } from './client.js';
export type { FetchLike, TernOptions } from './config.js';
export { API_KEY_ENV, BASE_URL_ENV, DEFAULT_BASE_URL } from './constants.js';
export type {
  Audience,
  AudienceList,
  Contact,
  ContactList,
  ContactsApi,
  CreateContactParams,
  ErasureResult,
  ImportContactsResult,
  ListContactsParams,
  UpdateContactParams,
} from './contacts.js';
export {
  isTernApiError,
  TernApiError,
  type TernApiErrorInit,
  TernConfigError,
  type TernErrorCode,
  TernTimeoutError,
} from './errors.js';
export type {
  EventFilters,
  EventList,
  EventsApi,
  ListEventsParams,
  StreamEventsParams,
  TernEvent,
} from './events.js';
export type { InboundApi, ListInboundParams } from './inbound.js';
export type {
  CreateSequenceParams,
  Enrollment,
  EnrollmentList,
  Sequence,
  SequenceList,
  SequenceStep,
  SequenceStepParams,
  SequencesApi,
  UpdateSequenceParams,
} from './sequences.js';
export type {
  BatchEmailResponse,
  CancelEmailResponse,
  ConsistentReadOptions,
  EmailDetail,
  EmailLogEntry,
  EmailStatus,
  GetLogsParams,
  IterateLogsParams,
  ListMeta,
  LogsMeta,
  LogsResponse,
  RequestOptions,
  SendEmailParams,
  SendEmailResponse,
  SendOptions,
} from './types.js';
export { type VerifyWebhookOptions, verifyWebhook, WebhookVerificationError } from './verify-webhook.js';
export type {
  CreateWebhookParams,
  Page,
  ReplayParams,
  UpdateWebhookParams,
  WebhooksApi,
} from './webhooks.js';
