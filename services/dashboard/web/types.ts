// The answers the dashboard reads (SPEC §6–§8, §11–§17). The wire types are the contracts' own
// (`@tern/contracts/wire`: types only, pinned there to the routes' schemas), under the names the
// pages import; the answers without a wire type yet name only the fields the pages use, each
// pinned to its route's schema in test/architecture/dashboard-types.check.ts (a route that stops
// serving a field a page reads fails the typecheck).

export type {
  AnalyticsCounts as BreakdownCounters,
  AnalyticsDimension as Dimension,
  AnalyticsPeriod,
  Audience,
  Automation,
  AutomationRun,
  AutomationStep,
  BreakdownRow,
  Campaign,
  CampaignDay,
  CampaignStatus,
  Contact,
  ContactProperty,
  Deliverability,
  DmarcSource,
  DmarcSummary,
  EmailDetail,
  EmailLogEntry as LogEntry,
  Enrollment,
  ImportResult,
  InboundAttachment,
  InboundAuth,
  InboundList,
  InboundMessage,
  InboundSummary,
  List,
  ListMeta,
  MailStats,
  ProviderDeliverability,
  Segment,
  Sequence,
  SequenceStep,
  StreamEvent,
  StreamPage,
  Topic,
  WebhookAttempt as DeliveryAttempt,
  WebhookDelivery as Delivery,
} from '@tern/contracts/wire';

import type {
  AnalyticsDimension,
  ListMeta,
  WebhookEndpoint,
  Breakdown as WireBreakdown,
} from '@tern/contracts/wire';

/** `GET /analytics/breakdown`: `by` is the dimension the page asked for (the answer echoes it). */
export type Breakdown = Omit<WireBreakdown, 'by'> & { by: AnalyticsDimension };

// The scope names themselves: `@tern/contracts/scope-names` imports nothing (no zod reaches the bundle).
export { SCOPES } from '@tern/contracts/scope-names';

/** A segment filter as the builder assembles it from its fields (SPEC §27); the API checks it. */
export type SegmentFilter = Record<string, unknown>;

export interface Summary {
  period: { since: string; until: string; days: number };
  totals: {
    total: number;
    sent: number;
    opened: number;
    clicked: number;
    bounced: number;
    complained: number;
    failed: number;
    /** Emails opened by a machine (Apple Mail Privacy Protection, scanners; SPEC §21): not in `opened`. */
    machineOpened: number;
  };
  rates: { openRate: number; clickRate: number; bounceRate: number; complaintRate: number };
}
export interface DailyBucket {
  date: string;
  sent: number;
  opened: number;
  clicked: number;
  bounced: number;
}
export interface TopTemplate {
  id: string;
  name: string;
  subject: string;
  sent: number;
  opened: number;
  clicked: number;
}

export const STATUSES = [
  'QUEUED',
  'SCHEDULED',
  'SENT',
  'DELAYED',
  'DELIVERED',
  'BOUNCED',
  'FAILED',
  'SUPPRESSED',
  'CANCELLED',
] as const;

export interface EmailContent {
  subject?: string | null;
  html?: string | null;
  text?: string | null;
}

/** Received mail (SPEC §24): an inbound route. */
export interface InboundRoute {
  id: string;
  priority: number;
  match: { recipient: string; from?: string; subject?: string };
  actions: Record<string, unknown>[];
  createdAt: string;
}
export interface ApiKey {
  id: string;
  name: string;
  scopes: string[];
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  /** The project the key is bound to; null = every project. */
  projectId: string | null;
}
export interface CreatedApiKey {
  id: string;
  name: string;
  scopes: string[];
  key: string;
  createdAt: string;
  expiresAt: string | null;
}

export interface Template {
  id: string;
  name: string;
  subject: string;
  html?: string | null;
  text?: string | null;
  createdAt?: string;
  updatedAt?: string;
}
export interface Rendered {
  subject: string;
  html?: string | null;
  text?: string | null;
}

// The contract's list itself: `@tern/contracts/event-types` imports nothing (no zod reaches the bundle).
/** What `GET /events?types=` filters on (SPEC §25): the delivery events of an email. */
export {
  EVENT_TYPES as STREAM_EVENT_TYPES,
  WEBHOOK_EVENT_TYPES as EVENT_TYPES,
} from '@tern/contracts/event-types';

/** `/webhooks` (SPEC §17); `secret` in the create and rotate-secret answers only. */
export type Webhook = WebhookEndpoint & { secret?: string };

export interface Suppression {
  email: string;
  reason: string | null;
  source?: string;
  createdAt: string;
}

/** `GET /emails/logs` pages carry the cursor of the next one (SPEC §19). */
export interface LogsMeta extends ListMeta {
  nextCursor: string | null;
}

/** `/projects` (SPEC §16). */
export interface Project {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
}

export const CAMPAIGN_STATUSES = ['draft', 'scheduled', 'sending', 'sent', 'cancelled'] as const;

export const ENROLLMENT_STATES = ['active', 'completed', 'stopped', 'cancelled'] as const;

/** `GET /tenants/:id/settings` (any role reads; owners and admins change). */
export interface TenantSettings {
  retentionDays: number | null;
  defaultRetentionDays: number;
  tracking: { opens: boolean; clicks: boolean };
  /** SPEC §23: emails per second handed to the provider at most; null = the server default. */
  sendRatePerSecond: number | null;
  /** The server default (SEND_RATE_PER_SECOND); 0 = unlimited. */
  defaultSendRatePerSecond: number;
}

/** SPEC §27 contact properties: the types of their values. */
export const PROPERTY_TYPES = ['string', 'number', 'boolean', 'date'] as const;

export const AUTOMATION_RUN_STATES = ['active', 'completed', 'stopped'] as const;
