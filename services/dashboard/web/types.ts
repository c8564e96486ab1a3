// The answers the dashboard reads (SPEC §6–§8, §11–§17). The API's OpenAPI document at
// /docs/json is their source; only the fields the pages use are named here.

export interface ListMeta {
  page: number;
  limit: number;
  total: number;
  totalPages: number;
}
export interface List<T> {
  data: T[];
  meta: ListMeta;
}

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

export interface LogEntry {
  id: string;
  toEmail: string | null;
  subject: string | null;
  status: string;
  provider: string | null;
  messageId: string | null;
  createdAt: string;
  tags: string[];
  /** A human open, a human click, a complaint was recorded (SPEC §4). */
  opened: boolean;
  clicked: boolean;
  complained: boolean;
}
export interface EmailDetail extends LogEntry {
  from?: string | null;
  cc?: string[] | null;
  bcc?: string[] | null;
  scheduledAt?: string | null;
  projectId?: string | null;
  opens?: number;
  clicks?: number;
  events: { type: string; occurredAt: string; data: Record<string, unknown> }[];
}
export interface EmailContent {
  subject?: string | null;
  html?: string | null;
  text?: string | null;
}

/** Received mail (SPEC §24 `GET /inbound`, `/inbound/:id`). */
export interface InboundAuth {
  spf: string;
  dkim: string;
  dmarc: string;
  arc: string;
}
export interface InboundAttachment {
  id: string;
  filename: string | null;
  contentType: string;
  size: number;
}
export interface InboundSummary {
  id: string;
  from: string | null;
  to: string[];
  subject: string | null;
  auth: InboundAuth;
  inReplyTo: string | null;
  receivedAt: string;
}
export interface InboundList {
  data: InboundSummary[];
  meta: { limit: number; nextCursor: string | null };
}
export interface InboundRoute {
  id: string;
  priority: number;
  match: { recipient: string; from?: string; subject?: string };
  actions: Record<string, unknown>[];
  createdAt: string;
}
export interface InboundMessage extends InboundSummary {
  cc: string[];
  text: string | null;
  html: string | null;
  attachments: InboundAttachment[];
  clientIp: string | null;
  helo: string | null;
  messageId: string | null;
}

export const SCOPES = [
  'email:send',
  'email:read',
  'templates:read',
  'contacts:read',
  'contacts:write',
  'campaigns:read',
  'campaigns:write',
  'sequences:read',
  'sequences:write',
  'suppressions:read',
  'suppressions:write',
  'projects:read',
  'projects:write',
  'webhooks:manage',
  'inbound:read',
  'inbound:manage',
  'events:read',
  'events:write',
  'analytics:read',
  'automations:read',
  'automations:write',
] as const;

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

/** One event of the stream (SPEC §25): its webhook body plus `id` and `cursor`. */
export interface StreamEvent {
  id: string;
  cursor: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}
/** `GET /events`: a page, and where the next one starts (`after`, or `before` with `order=newest`). */
export interface StreamPage {
  data: StreamEvent[];
  next: string;
  hasMore: boolean;
}

/** `/webhooks` (SPEC §17); `events: null` = every event type. */
export interface Webhook {
  id: string;
  url: string;
  events: string[] | null;
  description: string | null;
  enabled: boolean;
  /** Why Tern disabled it (failing for 5 days); null otherwise. */
  disabledReason: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
  /** Create and rotate-secret answers only. */
  secret?: string;
}
export interface DeliveryAttempt {
  attempt: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
}
/** `GET /webhooks/:id/deliveries`: one per (event, endpoint), its attempts oldest first. */
export interface Delivery {
  id: string;
  /** The `webhook-id` header (the event's id). */
  webhookId: string;
  eventType: string;
  emailId: string;
  replayId: string | null;
  status: 'pending' | 'delivered' | 'failed';
  attempts: DeliveryAttempt[];
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Suppression {
  email: string;
  reason: string | null;
  source?: string;
  createdAt: string;
}

export interface Contact {
  id: string;
  email: string;
  firstName?: string | null;
  lastName?: string | null;
  subscribed: boolean;
  audiences?: string[];
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

/** `GET /audiences`: `reachable` is whom a campaign to it reaches now (subscribed, not suppressed). */
export interface Audience {
  name: string;
  contacts: number;
  subscribed: number;
  reachable: number;
}

export interface ImportResult {
  rows: number;
  created: number;
  updated: number;
  failed: number;
  errors: { row: number; message: string }[];
}

/** SPEC §15 `stats` of a campaign or a sequence step. */
export interface MailStats {
  recipients: number;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
  unsubscribed: number;
  /** Recipients skipped: their message could not be composed (nothing sent). */
  failed: number;
}

export const CAMPAIGN_STATUSES = ['draft', 'scheduled', 'sending', 'sent', 'cancelled'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

export interface Campaign {
  id: string;
  name: string;
  from: string;
  audience: string;
  templateId: string | null;
  subject: string | null;
  html: string | null;
  text: string | null;
  status: CampaignStatus;
  scheduledAt: string | null;
  sentAt: string | null;
  createdAt: string;
  updatedAt: string;
  stats: MailStats;
}

/** `GET /campaigns/:id/daily`: per UTC day of the first event of each kind. */
export interface CampaignDay {
  date: string;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
}

export interface SequenceStep {
  delayMinutes: number;
  templateId: string | null;
  subject: string | null;
  html: string | null;
  text: string | null;
  stats: MailStats;
}

export interface Sequence {
  id: string;
  name: string;
  from: string;
  steps: SequenceStep[];
  enrollments: { active: number; completed: number; stopped: number; cancelled: number };
  createdAt: string;
  updatedAt: string;
}

export const ENROLLMENT_STATES = ['active', 'completed', 'stopped', 'cancelled'] as const;

export interface Enrollment {
  id: string;
  sequenceId: string;
  contactId: string;
  email: string | null;
  state: (typeof ENROLLMENT_STATES)[number];
  stopReason: string | null;
  nextStep: number;
  nextDueAt: string | null;
  enrolledAt: string;
}

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

/** SPEC §26: the dimensions of `GET /analytics/breakdown` (`by=`, and each one a filter). */
export const DIMENSIONS = [
  'tag',
  'template',
  'project',
  'campaign',
  'domain',
  'provider',
  'client',
  'device',
  'bounce',
] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/** The counters of a breakdown row or of one point of its series. */
export interface BreakdownCounters {
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
export interface BreakdownRow extends BreakdownCounters {
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
  series?: ({ start: string } & BreakdownCounters)[];
}
export interface AnalyticsPeriod {
  from: string;
  to: string;
  timeZone: string;
}
export interface Breakdown {
  by: Dimension;
  interval: 'hour' | 'day' | null;
  period: AnalyticsPeriod;
  data: BreakdownRow[];
}

/** `GET /analytics/deliverability`: per recipient mailbox provider. */
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

/** `GET /domains/:id/dmarc` (SPEC §26): what receivers reported about a domain, by source IP. */
export interface DmarcSource {
  sourceIp: string;
  count: number;
  disposition: { none: number; quarantine: number; reject: number };
  dkim: { pass: number; fail: number };
  spf: { pass: number; fail: number };
  reporters: string[];
  firstSeen: string;
  lastSeen: string;
}
export interface DmarcSummary {
  domain: string;
  days: number;
  reports: number;
  rejected: number;
  messages: number;
  sources: DmarcSource[];
}

/** SPEC §27 contact properties: typed definitions of the values contacts carry. */
export const PROPERTY_TYPES = ['string', 'number', 'boolean', 'date'] as const;
export interface ContactProperty {
  name: string;
  type: (typeof PROPERTY_TYPES)[number];
  createdAt: string;
}

/** SPEC §27 topics: what contacts subscribe to. */
export interface Topic {
  id: string;
  name: string;
  default: 'opt_in' | 'opt_out';
  public: boolean;
  createdAt: string;
  updatedAt: string;
}

/** A segment filter (SPEC §27); the API checks it. */
export type SegmentFilter = Record<string, unknown>;
export interface Segment {
  id: string;
  name: string;
  filter: SegmentFilter;
  createdAt: string;
  updatedAt: string;
}

/** SPEC §27 automations: a trigger and a tree of steps, each contact's run through them. */
export type AutomationStep = Record<string, unknown>;
export interface Automation {
  id: string;
  name: string;
  from: string | null;
  trigger: { event: string };
  steps: AutomationStep[];
  enabled: boolean;
  runs: { active: number; completed: number; stopped: number };
  createdAt: string;
  updatedAt: string;
}
export const AUTOMATION_RUN_STATES = ['active', 'completed', 'stopped'] as const;
export interface AutomationRun {
  id: string;
  contactId: string;
  email: string | null;
  state: (typeof AUTOMATION_RUN_STATES)[number];
  stopReason: string | null;
  position: string | null;
  waiting: 'delay' | 'event' | null;
  dueAt: string | null;
  stepsDone: number;
  startedAt: string;
}
