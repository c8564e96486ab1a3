import { type DeliveryEvent, envelopeOf } from '@tern/contracts';
import { type AttemptEvents, attemptEvents } from '@tern/domain';
import type { StoredMessage } from '@tern/sending';
import type { FollowUp } from './ports.js';

/**
 * Several recipients in one message (SPEC §22; docs/sending.md § "Several recipients"): the
 * envelope is to + cc + bcc, each address once. An outcome about one of them names it (the
 * event's `recipient`, its slot in the envelope in the event id); on a message to one address
 * every outcome is the message's, as before arrays existed.
 */
export type Envelope = ReturnType<typeof envelopeOf>;

export const envelopeOfMessage = (message: StoredMessage): Envelope => envelopeOf(message);

/** The message without the `dropped` addresses (lowercased) in its to, cc and bcc; the same object when none is dropped. */
export function withoutRecipients(message: StoredMessage, dropped: ReadonlySet<string>): StoredMessage {
  if (dropped.size === 0) return message;
  const keep = (list: readonly string[]) =>
    list.filter((a) => !dropped.has((envelopeOf({ to: a })[0]?.address ?? a).toLowerCase()));
  const to = typeof message.to === 'string' ? keep([message.to]) : keep(message.to);
  return {
    ...message,
    to: typeof message.to === 'string' && to.length === 1 ? to[0]! : to,
    ...(message.cc ? { cc: keep(message.cc) } : {}),
    ...(message.bcc ? { bcc: keep(message.bcc) } : {}),
  };
}

/**
 * The attempt's events about one recipient of `envelope`, or the message's when the envelope has
 * one address (or the recipient is not in it).
 */
export function eventsAbout(
  envelope: Envelope,
  recipient: string | undefined,
  make: (who?: { recipient: string; slot: number }) => AttemptEvents,
): AttemptEvents {
  if (recipient === undefined || envelope.length <= 1) return make();
  const slot = envelope.findIndex((r) => r.address.toLowerCase() === recipient.toLowerCase());
  return slot < 0 ? make() : make({ recipient: envelope[slot]!.address, slot });
}

/** A provider's reported outcome as this attempt's event, about its recipient when it names one. */
export function followUpEvent(
  envelope: Envelope,
  f: FollowUp,
  make: (who?: { recipient: string; slot: number }) => AttemptEvents,
): DeliveryEvent {
  const event = eventsAbout(envelope, f.recipient, make);
  switch (f.type) {
    case 'email.delivered':
      return event.delivered();
    case 'email.bounced':
      return event.bounced({ bounceType: f.bounceType, reason: f.reason });
    case 'email.complained':
      return event.complained(f.feedbackType !== undefined ? { feedbackType: f.feedbackType } : {});
  }
}

/**
 * The attempt's event factories: each call's events come 1 ms after the previous call's (its
 * first event at `at()` of the first call + the events built so far), so events built in order
 * keep that order on the timeline, whichever recipient each names.
 */
export function attemptMaker(tenantId: string, emailId: string, attempt: number, at: () => Date) {
  let base: number | null = null;
  let next = 0;
  return (who?: { recipient: string; slot: number }): AttemptEvents => {
    base ??= at().getTime();
    // Two events at most per factory (delayed + failed of a final try).
    const events = attemptEvents(tenantId, emailId, attempt, new Date(base + next), who);
    next += 2;
    return events;
  };
}
