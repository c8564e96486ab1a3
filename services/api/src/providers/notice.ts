// What a provider notification says, as Tern reads it (SPEC §21): the types the notice parsers
// (notices.ts, webhook-notices.ts, notice-fields.ts) and the provider routes share.

/**
 * What one provider notification says happened to one message, before Tern knows which email it
 * is (SPEC §21). `key` is the provider's own id of the event (SNS MessageId, sg_event_id, Mailgun
 * event id, the Standard Webhooks `webhook-id`; Postmark sends none, so its record's identity is
 * used): the Tern event id derives from it, so a redelivered notification is a duplicate.
 */
export interface Notice {
  key: string;
  /** Ids the provider names the message by; any of them may be the one `email.sent` recorded. */
  messageIds: string[];
  /** The provider's time of the event; undefined → the time it was received. */
  occurredAt: string | undefined;
  outcome: Outcome;
  /**
   * The one recipient of several the outcome is about (SPEC §22): set when the notification names
   * several recipients of the message, one notice each; the event then names it.
   */
  recipient?: string;
}

export type Outcome =
  | { type: 'email.delivered'; data: Record<string, never> }
  | { type: 'email.delayed'; data: { reason?: string } }
  | {
      type: 'email.bounced';
      data: { bounceType: 'hard' | 'soft'; reason?: string; smtpStatus?: string; diagnostic?: string };
    }
  | { type: 'email.complained'; data: { feedbackType?: string } }
  | { type: 'email.failed'; data: { reason: string } }
  | { type: 'email.opened'; data: { userAgent?: string; machine?: boolean } }
  | { type: 'email.clicked'; data: { url: string; userAgent?: string } };

export type ProviderName = 'ses' | 'sendgrid' | 'postmark' | 'mailgun' | 'resend';
