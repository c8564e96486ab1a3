import type { DeliveryEvent } from '@tern/contracts';
import { bounceCategory } from './bounce-category.js';
import { instant } from './time.js';
import { classifyUserAgent } from './user-agent.js';

/**
 * The per-email analytics dimensions the events decide (SPEC §26), folded like the rest of the
 * email's state (commutative: each is a minimum or maximum under the (instant, id) order, or an
 * OR): the client and device of the FIRST human open or click, the category of the LATEST bounce,
 * whether the email was ever deferred. The mailbox provider is set once by `foldBatch` from the
 * recipient's domain (it needs DNS, so it is resolved before the fold and kept here so every later
 * change of the email is counted under the same provider).
 */
export type EmailDims = {
  mailbox?: string;
  client?: string;
  device?: string;
  engagedAt?: string;
  engagedId?: string;
  bounce?: string;
  bounceAt?: string;
  bounceId?: string;
  delayed?: boolean;
};

const before = (ms: number, id: string, at: string | undefined, atId: string | undefined) =>
  at === undefined || atId === undefined ? true : ms !== instant(at) ? ms < instant(at) : id < atId;

/** The dims after one (deduplicated) event; the same object when nothing changed. */
export function evolveDims(dims: EmailDims | undefined, event: DeliveryEvent): EmailDims | undefined {
  const ms = instant(event.occurredAt);
  const iso = new Date(ms).toISOString();
  switch (event.type) {
    case 'email.opened':
    case 'email.clicked': {
      const data = event.data as { userAgent?: string; bot?: boolean; machine?: boolean };
      if (data.bot || data.machine) return dims;
      if (!before(ms, event.id, dims?.engagedAt, dims?.engagedId)) return dims;
      const { client, device } = classifyUserAgent(data.userAgent);
      return { ...dims, client, device, engagedAt: iso, engagedId: event.id };
    }
    case 'email.bounced': {
      // Latest bounce wins: `before` with the arguments swapped is "after".
      if (dims?.bounceAt !== undefined && dims.bounceId !== undefined) {
        const known = instant(dims.bounceAt);
        if (ms !== known ? ms < known : event.id < dims.bounceId) return dims;
      }
      return {
        ...dims,
        bounce: bounceCategory(event.data.smtpStatus, event.data.diagnostic),
        bounceAt: iso,
        bounceId: event.id,
      };
    }
    case 'email.delayed':
      return dims?.delayed ? dims : { ...dims, delayed: true };
    default:
      return dims;
  }
}
