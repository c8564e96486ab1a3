import type { EventType, WebhookEventType } from './event-types.js';

// The answers of the mail routes (emails, inbound, webhooks, the event stream, DMARC), spelled out
// once, zod-free: the SDK's public types and the dashboard's are these (`@tern/contracts/wire`),
// and wire-checks.ts pins each to the output of its route's schema.

/** `meta` of every list (SPEC §7). */
export interface ListMeta {
  page: number;
  limit: number;
  total: number;
  /** `ceil(total / limit)`; a page past it returns `data: []`. */
  totalPages: number;
}

/** A page of a list: `{ data, meta }`, the answer of every list route. */
export interface List<T> {
  data: T[];
  meta: ListMeta;
}

/** Delivery status of an email (SPEC §5). */
export type EmailStatus =
  | 'QUEUED'
  | 'SCHEDULED'
  | 'SENT'
  | 'DELAYED'
  | 'DELIVERED'
  | 'BOUNCED'
  | 'FAILED'
  | 'SUPPRESSED'
  | 'CANCELLED';

/** One entry of `GET /emails/logs` (SPEC §7). */
export interface EmailLogEntry {
  id: string;
  /** Null once the recipient was erased (`contacts.erase`). */
  toEmail: string | null;
  /** Null once the recipient was erased (`contacts.erase`). */
  subject: string | null;
  status: EmailStatus;
  /** null until the email was sent. */
  provider: string | null;
  /** null until the email was sent. */
  messageId: string | null;
  /** ISO 8601 timestamp of `email.queued`. */
  createdAt: string;
  tags: string[];
  /** A human open was recorded (machine opens do not count). */
  opened: boolean;
  /** A human click was recorded (scanner clicks do not count). */
  clicked: boolean;
  /** A complaint was recorded. */
  complained: boolean;
}

/** The body of `GET /emails/logs`, exactly as the endpoint returns it. */
export type LogsResponse = List<EmailLogEntry>;

export interface SendEmailResponse {
  id: string;
  /**
   * Where this send is in the event stream (SPEC §25): pass it to `emails.get(id, { consistentWith })`
   * to read your own write (the read waits until the read models include it).
   */
  position: string;
}

export interface BatchEmailResponse {
  data: SendEmailResponse[];
  /**
   * The batch's position: its last email on each partition of the event log, joined by `,` (one id
   * on a one-partition log). `emails.get(anyId, { consistentWith })` with it waits for the whole batch.
   */
  position: string;
}

export interface CancelEmailResponse {
  id: string;
  status: 'CANCELLED';
}

/** One recipient of an email and its own last outcome. */
export interface EmailRecipient {
  email: string;
  type: 'to' | 'cc' | 'bcc';
  status: EmailStatus;
}

/** `GET /emails/:id`: the log entry, the send's details and its timeline (oldest first). */
export interface EmailDetail extends EmailLogEntry {
  /** Every `to` address (`toEmail` is the first). */
  to: string[];
  /** Every recipient (to, cc, bcc) with its own last outcome; an erased address is not listed. */
  recipients: EmailRecipient[];
  from: string | null;
  cc: string[];
  bcc: string[];
  replyTo: string | null;
  scheduledAt: string | null;
  projectId: string | null;
  templateId: string | null;
  opens: number;
  clicks: number;
  /** The timeline, oldest first. */
  events: { type: EventType; occurredAt: string; data: Record<string, unknown> }[];
  /** Received replies to this email (`GET /inbound/:id`), oldest first. */
  replies?: { id: string; receivedAt: string }[] | undefined;
}

/** A verdict of SPF, DKIM, DMARC or ARC (`pass`, `fail`, `none`, `temperror`, …). */
export type InboundVerdict = string;

/** SPF, DKIM, DMARC and ARC as verified on arrival. */
export interface InboundAuth {
  spf: InboundVerdict;
  dkim: InboundVerdict;
  dmarc: InboundVerdict;
  arc: InboundVerdict;
}

export interface InboundAttachment {
  /** `att_<n>`: pass it to `attachment(id, attachmentId)`. */
  id: string;
  filename: string | null;
  contentType: string;
  size: number;
  contentId: string | null;
}

/** One received message of a list (SPEC §24 `GET /inbound`). */
export interface InboundSummary {
  id: string;
  from: string | null;
  to: string[];
  subject: string | null;
  auth: InboundAuth;
  /** The id of the email this answers, when it answers one the tenant sent. */
  inReplyTo: string | null;
  receivedAt: string;
  attachments: InboundAttachment[];
}

/** `GET /inbound/:id`. */
export interface InboundMessage extends InboundSummary {
  cc: string[];
  text: string | null;
  html: string | null;
  headers: { name: string; value: string }[];
  clientIp: string | null;
  helo: string | null;
  messageId: string | null;
}

export interface InboundList {
  data: InboundSummary[];
  meta: { limit: number; nextCursor: string | null };
}

/** A webhook endpoint (SPEC §17). */
export interface WebhookEndpoint {
  id: string;
  url: string;
  /** null = every event type. */
  events: WebhookEventType[] | null;
  description: string | null;
  enabled: boolean;
  /** Why Tern disabled it (failing for 5 days); null otherwise. */
  disabledReason: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
}

/** Create and rotate answers: the only times the signing secret is shown. */
export interface WebhookEndpointWithSecret extends WebhookEndpoint {
  secret: string;
}

export interface WebhookAttempt {
  attempt: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
}

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One delivery of an event to an endpoint, its attempts oldest first. */
export interface WebhookDelivery {
  id: string;
  /** The `webhook-id` header: the event's id, the same on every retry and replay. */
  webhookId: string;
  eventType: string;
  emailId: string;
  replayId: string | null;
  status: WebhookDeliveryStatus;
  attempts: WebhookAttempt[];
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface WebhookReplay {
  id: string;
  webhookId: string;
  /** A window replay's start and end; null for a replay from a cursor. */
  since: string | null;
  until: string | null;
  /** A replay from a cursor: the cursor given and the last cursor covered; null for a window replay. */
  after: string | null;
  through: string | null;
  /** Stopped at 10 000 events: replay again with `{ after: through }` for the rest. */
  hasMore: boolean;
  status: 'pending' | 'running' | 'done';
}

/** One event of the stream (SPEC §25): its webhook body (SPEC §17), its id and its cursor. */
export interface StreamEvent {
  id: string;
  /** Its position in the tenant's stream: pass it as `after`. */
  cursor: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** `GET /events`: a page, and where the next one starts. */
export interface StreamPage {
  data: StreamEvent[];
  /** Pass as `after` for the next page, or to poll later. */
  next: string;
  /** The page is full: more events follow now. */
  hasMore: boolean;
}

/** `GET /domains/:id/dmarc` (SPEC §26): one sending source of a domain as DMARC reporters saw it. */
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

/** What receivers reported about a domain, by source IP. */
export interface DmarcSummary {
  domain: string;
  days: number;
  reports: number;
  rejected: number;
  messages: number;
  sources: DmarcSource[];
}
