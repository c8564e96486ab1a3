// The SDK's own parameter and option types. The answers it reads (the wire types) are the
// contracts' zod-free spelling (`@tern/contracts/wire`, pinned there to the routes' schemas),
// re-exported under the SDK's names; tsconfig.build.json maps the entry so that `dts.resolve`
// folds them into index.d.ts (no zod in the published declarations). `SendEmailParams`, a body,
// is pinned to the contract by contract-checks.ts.

export type {
  BatchEmailResponse,
  CancelEmailResponse,
  EmailDetail,
  EmailLogEntry,
  EmailRecipient,
  EmailStatus,
  ListMeta,
  ListMeta as LogsMeta,
  LogsResponse,
  SendEmailResponse,
} from '@tern/contracts/wire';

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

/** Options of a read that must include a write of yours. */
export interface ConsistentReadOptions extends RequestOptions {
  /** A write's `position`: the answer waits (≤ 5 s) until it is projected; past that a `TernApiError` 503. */
  consistentWith?: string;
}

export interface SendOptions extends RequestOptions {
  /**
   * Idempotency-Key (1..256 characters): the same key and body within 24 h send once. Default: a
   * fresh key per call, reused by that call's retries.
   */
  idempotencyKey?: string;
}
