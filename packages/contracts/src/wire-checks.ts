// The wire types (wire.ts) pinned to the schemas the routes answer with: each `Same<…>` fails
// `tsc` when a schema and its wire type drift. Nothing imports this file; the typecheck reads it.
// Wire types whose schema an api route declares (topics, contact properties, segments, the event
// stream, the inbound list) are pinned beside those schemas, in services/api/src/wire-checks.ts.

import type { breakdownResponseSchema, deliverabilityResponseSchema } from './analytics.js';
import type { automationRunSchema, automationSchema, FilterOp } from './automations.js';
import type {
  campaignDailySchema,
  campaignSchema,
  enrollmentSchema,
  mailStatsSchema,
  sequenceSchema,
} from './campaign-responses.js';
import type {
  audienceListSchema,
  audienceSchema,
  contactListSchema,
  contactSchema,
  erasureResultSchema,
  importResultSchema,
} from './contacts.js';
import type { dmarcSourceSchema, dmarcSummarySchema } from './domains.js';
import type {
  batchEmailResponseSchema,
  cancelEmailResponseSchema,
  emailDetailSchema,
  emailRecipientSchema,
  sendEmailResponseSchema,
} from './email-responses.js';
import type { emailLogEntrySchema, logsResponseSchema } from './http.js';
import type {
  inboundAttachmentSchema,
  inboundAuthSchema,
  inboundMessageSchema,
  inboundSummarySchema,
} from './inbound.js';
import type { listMetaSchema } from './resources.js';
import type { emailStatusSchema } from './status.js';
import type { Assert, Equals, Same } from './type-equality.js';
import type {
  webhookAttemptSchema,
  webhookDeliverySchema,
  webhookDeliveryStatusSchema,
  webhookReplaySchema,
  webhookSchema,
  webhookWithSecretSchema,
} from './webhooks.js';
import type * as W from './wire.js';

type _WireChecks = [
  Assert<Same<W.ListMeta, typeof listMetaSchema>>,
  Assert<Same<W.Breakdown, typeof breakdownResponseSchema>>,
  Assert<Equals<W.BreakdownRow, W.Breakdown['data'][number]>>,
  Assert<Equals<W.AnalyticsPeriod, W.Breakdown['period']>>,
  Assert<Equals<W.AnalyticsCounts, Omit<NonNullable<W.BreakdownRow['series']>[number], 'start'>>>,
  Assert<Same<W.Deliverability, typeof deliverabilityResponseSchema>>,
  Assert<Equals<W.ProviderDeliverability, W.Deliverability['providers'][number]>>,
  Assert<Same<W.EmailStatus, typeof emailStatusSchema>>,
  Assert<Equals<W.BreakdownPoint, NonNullable<W.BreakdownRow['series']>[number]>>,
  Assert<Same<W.EmailLogEntry, typeof emailLogEntrySchema>>,
  Assert<Equals<W.List<W.EmailLogEntry>, W.LogsResponse>>,
  Assert<Same<W.LogsResponse, typeof logsResponseSchema>>,
  Assert<Same<W.SendEmailResponse, typeof sendEmailResponseSchema>>,
  Assert<Same<W.BatchEmailResponse, typeof batchEmailResponseSchema>>,
  Assert<Same<W.CancelEmailResponse, typeof cancelEmailResponseSchema>>,
  Assert<Same<W.EmailRecipient, typeof emailRecipientSchema>>,
  Assert<Same<W.EmailDetail, typeof emailDetailSchema>>,
  Assert<Same<W.InboundAuth, typeof inboundAuthSchema>>,
  Assert<Equals<W.InboundVerdict, W.InboundAuth['spf']>>,
  Assert<Same<W.InboundAttachment, typeof inboundAttachmentSchema>>,
  Assert<Same<W.InboundSummary, typeof inboundSummarySchema>>,
  Assert<Same<W.InboundMessage, typeof inboundMessageSchema>>,
  Assert<Same<W.WebhookEndpoint, typeof webhookSchema>>,
  Assert<Same<W.WebhookEndpointWithSecret, typeof webhookWithSecretSchema>>,
  Assert<Same<W.WebhookAttempt, typeof webhookAttemptSchema>>,
  Assert<Same<W.WebhookDeliveryStatus, typeof webhookDeliveryStatusSchema>>,
  Assert<Same<W.WebhookDelivery, typeof webhookDeliverySchema>>,
  Assert<Same<W.WebhookReplay, typeof webhookReplaySchema>>,
  Assert<Same<W.DmarcSource, typeof dmarcSourceSchema>>,
  Assert<Same<W.DmarcSummary, typeof dmarcSummarySchema>>,
  Assert<Same<W.Contact, typeof contactSchema>>,
  Assert<Same<W.ContactList, typeof contactListSchema>>,
  Assert<Same<W.Audience, typeof audienceSchema>>,
  Assert<Same<W.AudienceList, typeof audienceListSchema>>,
  Assert<Same<W.ImportResult, typeof importResultSchema>>,
  Assert<Same<W.ErasureResult, typeof erasureResultSchema>>,
  Assert<Same<W.MailStats, typeof mailStatsSchema>>,
  Assert<Same<W.Campaign, typeof campaignSchema>>,
  Assert<Equals<W.CampaignStatus, W.Campaign['status']>>,
  Assert<Same<{ days: number; daily: W.CampaignDay[] }, typeof campaignDailySchema>>,
  Assert<Same<W.Sequence, typeof sequenceSchema>>,
  Assert<Equals<W.SequenceStep, W.Sequence['steps'][number]>>,
  Assert<Same<W.Enrollment, typeof enrollmentSchema>>,
  Assert<Same<W.Automation, typeof automationSchema>>,
  Assert<Equals<W.AutomationStep, W.Automation['steps'][number]>>,
  Assert<Same<W.AutomationRun, typeof automationRunSchema>>,
  Assert<Equals<FilterOp, Extract<W.SegmentFilter, { op: unknown }>['op']>>,
  Assert<Equals<W.AutomationFilter, W.SegmentFilter>>,
];
