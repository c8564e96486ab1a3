import type { KeyObject } from 'node:crypto';
import type { RenderedMessage } from '@tern/contracts';
import type { AttachmentFile } from '@tern/sending';
import type pg from 'pg';

/**
 * True when the address is on the tenant's suppression list (SPEC §13): `isSuppressed` of the
 * suppressions owner (`@tern/read-models`), injected by whoever starts the sender (the sender is a
 * dependency of the api package, so it cannot import it).
 */
export type IsSuppressed = (pool: pg.Pool, tenantId: string, email: string) => Promise<boolean>;

/**
 * The same question for many (tenant, address) pairs at once, in one query: the answers in the
 * order asked (`suppressedAmong` of `@tern/read-models`). The sender asks it once per claim round.
 */
export type SuppressedAmong = (
  pool: pg.Pool,
  items: readonly { tenantId: string; email: string }[],
) => Promise<boolean[]>;

/** A template's content, or null when the tenant has none with that id: `getTemplate` of the templates store. */
export type GetTemplate = (
  pool: pg.Pool,
  tenantId: string,
  id: string,
) => Promise<{ subject: string; html: string | null; text: string | null } | null>;

/**
 * Events a provider reports after accepting a message (the sandbox's simulated outcomes, the
 * recipients a relay refused). `recipient`: the one recipient of several it is about (SPEC §22);
 * the sender ignores it on a message to one address (the outcome is the message's).
 */
export type FollowUp = (
  | { type: 'email.delivered' }
  | { type: 'email.bounced'; bounceType: 'hard' | 'soft'; reason: string }
  | { type: 'email.complained'; feedbackType?: string }
) & { recipient?: string };

/**
 * The relay (or Tern's configuration of it), not the recipient, failed: the step that failed
 * (`CONN`, `AUTH PLAIN`, `MAIL FROM`, `API`…) and its reply or error code (`535`, `ECONNECTION`).
 * Safe to show: no address, no secret, no free text of the server.
 */
export interface ProviderFault {
  step: string;
  code: string;
}

/** What a provider answered for one message. */
export type ProviderResult =
  | {
      kind: 'sent';
      messageId: string;
      /** The relay's own id of the message, read from its answer (SES, Postmark, SendGrid, Postfix). */
      providerMessageId?: string;
      followUps?: FollowUp[];
    }
  /**
   * A temporary refusal: retried with backoff. With `fault`, the provider itself failed (a login,
   * a connection, the envelope sender…): the provider is reported failing until it works again.
   */
  | { kind: 'delayed'; reason: string; retryAfterMs?: number; fault?: ProviderFault }
  /**
   * A permanent refusal (5xx): the address does not take mail. `recipients`: a message to several
   * addresses that every one of them refused, each with its own answer (SPEC §22).
   */
  | {
      kind: 'bounced';
      reason: string;
      recipients?: { recipient: string; bounceType: 'hard' | 'soft'; reason: string }[];
    }
  | { kind: 'failed'; reason: string };

/** How a provider signs and addresses one message (SPEC §20); absent for mail of an unverified domain. */
export interface Signing {
  /** DKIM `d=`, `s=` and the private key (parsed; in memory only, never logged or kept). */
  dkim: { domain: string; selector: string; privateKey: KeyObject };
}

export interface SendContext {
  tenantId: string;
  emailId: string;
  signing?: Signing;
  /**
   * The VERP envelope sender (MAIL FROM, SPEC §21) on the signing domain's bounce subdomain or
   * BOUNCE_DOMAIN; absent: the relay takes the From address.
   */
  envelopeFrom?: string;
  /**
   * The VERP envelope sender of the copy to one recipient (issue 40, item 2): its per-recipient
   * form, naming the recipient by its place in the stored email's envelope (to, cc, bcc), the
   * order the bounce mailbox resolves. Given with `envelopeFrom`; the SMTP provider then sends one
   * envelope per recipient.
   */
  envelopeFromFor?: (recipient: string) => string;
  /**
   * The attachments' bytes (SPEC §22), in the order `message.attachments` describes them; one
   * with a `contentId` is an inline part (`cid:`).
   */
  attachments?: readonly AttachmentFile[];
}

export interface MailProvider {
  /** Stored as `provider` on `email.sent`. */
  readonly name: string;
  send(message: RenderedMessage, context: SendContext): Promise<ProviderResult>;
  /**
   * Checks the provider can take mail (connects and logs in) without sending any: null when it
   * can, else the fault. Used while the provider is reported failing, to notice it works again.
   */
  check?(): Promise<ProviderFault | null>;
  close?(): Promise<void>;
  /**
   * How much the provider takes at once now (issue 45): the messages it may hold in flight (its
   * relay's bound, which adapts to the relay's push-back) and how long a transaction takes
   * (moving average). The due-list sizes its claim rounds from it; absent: rounds of their own size.
   */
  capacity?(): ProviderCapacity;
}

export interface ProviderCapacity {
  inFlight: number;
  latencyMs: number;
}
