import type { DeliveryEvent, EmailRecipient, EmailStatus } from '@tern/contracts';
import { foldEmail, recipientOf } from './email-fold.js';

/**
 * Each recipient's own last outcome (SPEC §22; docs/sending.md § "Several recipients"): the fold
 * of the email's events that name that recipient or name none (the whole message's: queued, sent,
 * a single-recipient bounce…), by the same status rule as the email's own status. A recipient no
 * event speaks of yet reads `fallback` (the email's status before any outcome).
 */
export function recipientOutcomes(
  envelope: readonly { address: string; kind: 'to' | 'cc' | 'bcc' }[],
  events: readonly DeliveryEvent[],
  fallback: EmailStatus,
): EmailRecipient[] {
  return envelope.map(({ address, kind }) => {
    const mine = address.toLowerCase();
    const own = events.flatMap((e) => {
      const named = recipientOf(e);
      if (named === undefined) return [e];
      if (named.toLowerCase() !== mine) return [];
      // Folded as the whole message's: in this recipient's own fold it is.
      const { recipient: _r, ...data } = e.data as Record<string, unknown>;
      return [{ ...e, data } as DeliveryEvent];
    });
    const status = own.length === 0 ? fallback : (foldEmail(own).status ?? fallback);
    return { email: address, type: kind, status };
  });
}
