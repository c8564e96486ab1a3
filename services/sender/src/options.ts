import type { EventStream } from '@tern/event-log';
import type { Logger } from '@tern/kernel';
import type { AttachmentKeyring } from '@tern/sending';
import type { SigningKeys } from '@tern/sending-domains';
import type pg from 'pg';
import type { GetTemplate, IsSuppressed, MailProvider, ProviderFault, SuppressedAmong } from './ports.js';

/** SPEC §11: ≥ 5 retries over ≥ 1 h. Waits after the 1st, 2nd… refused attempt; then failed. */
export const DEFAULT_RETRY_DELAYS_MS = [60_000, 5 * 60_000, 10 * 60_000, 20 * 60_000, 30 * 60_000] as const;

export interface SenderOptions {
  pool: pg.Pool;
  log: EventStream;
  provider: MailProvider;
  /** Consumer group of the sender (its own, SPEC §11). */
  group?: string;
  /** PUBLIC_URL (tracking links) and TRACKING_SECRET. */
  tracking: { secret: string; publicUrl: string };
  /** Domain of the Message-ID `<emailId@domain>`; default PUBLIC_URL's host name. */
  messageIdDomain?: string;
  /** The suppression list (`isSuppressed` of `@tern/read-models`). */
  isSuppressed: IsSuppressed;
  /** The same list asked for a whole claim round in one query (`suppressedAmong` of `@tern/read-models`); absent: `isSuppressed` per email. */
  suppressedAmong?: SuppressedAmong;
  /** Template lookup (`getTemplate` of `@tern/templates`); rendering is `renderTemplate` of `@tern/domain`. */
  getTemplate: GetTemplate;
  /**
   * The DKIM keys of the tenants' verified domains (SPEC §20, `createSigningKeys` of
   * `@tern/sending-domains`): a message whose From domain (or a parent) is verified is signed and its
   * envelope sender is on the bounce subdomain. Absent: nothing is signed.
   */
  signingKeys?: SigningKeys;
  /**
   * Production with a real provider: a message whose From domain is no longer verified when it is
   * due (a scheduled send, a retry, a campaign's mail) fails with `DOMAIN_NOT_VERIFIED` unsent.
   */
  requireVerifiedDomain?: boolean;
  /**
   * BOUNCE_DOMAIN (SPEC §21): the bounce host of the VERP envelope sender of mail that no verified
   * domain signs. Unset: such mail keeps the relay's default envelope sender (its From).
   */
  bounceDomain?: string | undefined;
  /** Waits before retry 1, 2, …; after the last one the email fails. */
  retryDelaysMs?: readonly number[];
  /** How often the due-list is looked at when nothing woke the sender. Default 500 ms. */
  pollIntervalMs?: number;
  /** How long a claimed email belongs to this instance; a dead sender's claim is taken over after it. */
  leaseMs?: number;
  /**
   * Emails of the first claim round, handed to the provider side by side (each its own
   * transaction; the round's outcomes one append). Default 32. While there is a backlog, rounds
   * double from it up to `maxRoundSize` while each takes under half of `roundTargetMs` (`nextRoundSize`
   * in `round-size.ts`); a crash repeats at most the provider transactions of the rounds in flight
   * (`lanes`).
   */
  concurrency?: number;
  /** The largest claim round (see `concurrency`). Default 512. */
  maxRoundSize?: number;
  /**
   * The largest claim round after one with campaign or sequence mail (SPEC §23: a transactional
   * email arriving behind a campaign waits for the round in flight). Default 4 × `concurrency`
   * (128): a 100 000-contact campaign leaves in rounds of 128 while another tenant's send still
   * reaches DELIVERED within about a second (bench/README.md § "Bulk rounds of 128").
   */
  maxBulkRoundSize?: number;
  /** How long a claim round may take before the next one is smaller (see `concurrency`). Default 500 ms. */
  roundTargetMs?: number;
  /**
   * Claim rounds in flight at most per instance while transactional mail is backlogged (default 4,
   * `DEFAULT_LANES`): a lane whose claim came back full of transactional mail starts another, so
   * while one round's outcomes are appended and its slowest messages finish, the next rounds'
   * messages are with the provider. The lanes share one budget of claimed, unfinished emails
   * (`maxRoundSize`): a crash repeats at most that many provider transactions. A claim that is not
   * full (a due retry) or holds bulk mail starts none, so the retry schedule keeps one lane (a
   * fixed second lane made the retry-schedule tests of smtp.int.test.ts flaky on this machine).
   */
  lanes?: number;
  /** Every provider fault (a refused login, a lost connection…): the process's metrics count them. */
  onProviderFault?: (fault: ProviderFault) => void;
  /** While the provider is failing, how often its `check()` is asked whether it works again. Default 30 s. */
  providerCheckIntervalMs?: number;
  /**
   * SPEC §23: emails per second a tenant's mail is handed to the provider at most, when its
   * settings name no `sendRatePerSecond` (SEND_RATE_PER_SECOND). 0 or absent: unlimited.
   */
  defaultSendRatePerSecond?: number;
  /** Issue 40 item 9: the operator's ceiling on any tenant's rate (SEND_RATE_MAX_PER_SECOND); 0 or absent: none. */
  maxSendRatePerSecond?: number;
  /**
   * Opens attachment bytes (SPEC §22, `email_attachments`, sealed under the email's key). Absent:
   * an email with attachments fails unsent (it is never sent without them).
   */
  keyring?: AttachmentKeyring;
  now?: () => Date;
  logger?: Logger;
}

/**
 * Whether the provider took the last transaction (issue 24 item 13): failing from the first fault
 * (not about a recipient) until a transaction or a `check()` goes through again.
 */
export type ProviderHealth =
  | { failing: false }
  | { failing: true; since: Date; fault: ProviderFault; faults: number };

export const SENDER_GROUP = 'tern-sender';

/** What the sender's parts share: its options, the clock and the logger. */
export interface SenderContext {
  opts: SenderOptions;
  logger: Logger;
  now: () => Date;
}
