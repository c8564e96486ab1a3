// The contract types are zod-inferred (`z.infer<…>`): re-exporting them as-is would make the
// published `.d.ts` reference zod, which the SDK does not depend on. So the public types are
// spelled out here and pinned to the contract by the compile-time checks of contract-checks.ts:
// any drift in `@tern/contracts` fails `tsc`, and the published declarations stay self-contained.

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

export interface LogsMeta {
  page: number;
  limit: number;
  total: number;
  /** `ceil(total / limit)`; a page past it returns `data: []`. */
  totalPages: number;
}

/** `meta` of every list. */
export type ListMeta = LogsMeta;

/** The body of `GET /emails/logs`, exactly as the endpoint returns it. */
export interface LogsResponse {
  data: EmailLogEntry[];
  meta: LogsMeta;
}

export interface GetLogsParams {
  /** 1-based page, default 1 (server default). */
  page?: number;
  /** Entries per page, 1..100, default 20 (server default). */
  limit?: number;
}

export interface IterateLogsParams {
  /** Entries fetched per request, 1..100, default 100. */
  limit?: number;
}

/** Per-call options. */
export interface RequestOptions {
  /** Aborts the call (including retries and back-off waits); never retried. */
  signal?: AbortSignal;
}

/** `POST /emails/send` body (SPEC §11): `subject` + `html`/`text`, or a `templateId` with `variables`. */
export interface SendEmailParams {
  /** `addr@example.com` or `Name <addr@example.com>`. */
  from: string;
  /**
   * One address or 1..50 (to + cc + bcc ≤ 50): one message, one email id. The log entry's
   * `toEmail` is the first; `getEmail` gives each recipient's own outcome.
   */
  to: string | string[];
  cc?: string[];
  bcc?: string[];
  replyTo?: string;
  subject?: string;
  html?: string;
  text?: string;
  templateId?: string;
  variables?: Record<string, string | number | boolean | null>;
  /** Strings, or Resend's `{ name, value }` (stored as `name:value`); at most 50. */
  tags?: (string | { name: string; value: string })[];
  headers?: Record<string, string>;
  /** ISO 8601, in the future and at most 30 days ahead. */
  scheduledAt?: string;
  projectId?: string;
  /**
   * Files (SPEC §22): `content` is the bytes in standard base64; `contentId` makes an inline part
   * the HTML shows as `cid:<contentId>`. The whole message ≤ 40 MB (attachments counted as base64).
   */
  attachments?: { filename: string; content: string; contentType?: string; contentId?: string }[];
}

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

/** Options of a read that must include a write of yours. */
export interface ConsistentReadOptions extends RequestOptions {
  /** A write's `position`: the answer waits (≤ 5 s) until it is projected; past that a `TernApiError` 503. */
  consistentWith?: string;
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
  events: { type: string; occurredAt: string; data: Record<string, unknown> }[];
}

export interface SendOptions extends RequestOptions {
  /**
   * Idempotency-Key (1..256 characters): the same key and body within 24 h send once. Default: a
   * fresh key per call, reused by that call's retries.
   */
  idempotencyKey?: string;
}
