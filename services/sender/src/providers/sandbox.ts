import { envelopeOf, type RenderedMessage } from '@tern/contracts';
import { hasSandboxMessage, keepSandboxMessages } from '@tern/sending';
import type pg from 'pg';
import type { FollowUp, MailProvider, ProviderResult } from '../ports.js';

export const SANDBOX_DOMAIN = 'sandbox.test';

/**
 * The embedded default provider (SPEC §11, like SES's mailbox simulator): nothing leaves the
 * machine; the message is kept in `sandbox_messages` (GET /emails/:id/content) and the outcome
 * follows the recipient. `delayed@` is refused once, then delivered on the retry.
 */
export function createSandboxProvider(opts: { pool: pg.Pool; delayedRetryMs?: number }): MailProvider {
  const delayedRetryMs = opts.delayedRetryMs ?? 2_000;
  const triedOnce = new Set<string>();

  // The messages of the emails sent side by side (a claim round) are kept in one statement: each
  // `keep` joins the batch that the next turn of the event loop writes, and resolves once it is.
  let batch: { rows: { tenantId: string; emailId: string; message: object }[]; done: Promise<void> } | null =
    null;
  function keep(message: RenderedMessage, tenantId: string, emailId: string): Promise<void> {
    if (batch === null) {
      const rows: { tenantId: string; emailId: string; message: object }[] = [];
      const done = new Promise<void>((resolve, reject) => {
        setImmediate(() => {
          batch = null;
          keepSandboxMessages(opts.pool, rows).then(() => resolve(), reject);
        });
      });
      batch = { rows, done };
    }
    batch.rows.push({ tenantId, emailId, message });
    return batch.done;
  }

  /**
   * A message to several addresses (SPEC §22): each recipient's outcome follows its own address,
   * named on its event; `failed@` fails the whole message; `delayed@` is simply delivered (the
   * sandbox does not retry part of a message).
   */
  async function sendToSeveral(
    message: RenderedMessage,
    tenantId: string,
    emailId: string,
    envelope: readonly string[],
  ): Promise<ProviderResult> {
    if (envelope.includes(`failed@${SANDBOX_DOMAIN}`))
      return { kind: 'failed', reason: 'sandbox: failed@sandbox.test always fails' };
    await keep(message, tenantId, emailId);
    const followUps = envelope.flatMap((recipient): FollowUp[] => {
      switch (recipient) {
        case `bounced@${SANDBOX_DOMAIN}`:
          return [
            {
              type: 'email.bounced',
              bounceType: 'hard',
              reason: 'sandbox: 550 mailbox unavailable',
              recipient,
            },
          ];
        case `complained@${SANDBOX_DOMAIN}`:
          return [
            { type: 'email.delivered', recipient },
            { type: 'email.complained', feedbackType: 'abuse', recipient },
          ];
        default:
          return [{ type: 'email.delivered', recipient }];
      }
    });
    return { kind: 'sent', messageId: message.messageId, followUps };
  }

  return {
    name: 'sandbox',
    async send(message, { tenantId, emailId }): Promise<ProviderResult> {
      const envelope = envelopeOf(message).map((r) => r.address.toLowerCase());
      if (envelope.length > 1) return sendToSeveral(message, tenantId, emailId, envelope);
      const local = envelope[0] ?? '';
      const sent = (followUps: Extract<ProviderResult, { kind: 'sent' }>['followUps']) =>
        ({ kind: 'sent', messageId: message.messageId, followUps }) as const;
      switch (local) {
        case `failed@${SANDBOX_DOMAIN}`:
          return { kind: 'failed', reason: 'sandbox: failed@sandbox.test always fails' };
        case `delayed@${SANDBOX_DOMAIN}`: {
          // The first try is refused (the retry may run on another sender instance: the kept
          // message tells it the first try happened).
          const key = `${tenantId}\u0000${emailId}`;
          if (!triedOnce.has(key) && !(await hasSandboxMessage(opts.pool, tenantId, emailId))) {
            triedOnce.add(key);
            await keep(message, tenantId, emailId);
            return { kind: 'delayed', reason: 'sandbox: 451 try again later', retryAfterMs: delayedRetryMs };
          }
          triedOnce.delete(key);
          await keep(message, tenantId, emailId);
          return sent([{ type: 'email.delivered' }]);
        }
        case `bounced@${SANDBOX_DOMAIN}`:
          await keep(message, tenantId, emailId);
          return sent([
            { type: 'email.bounced', bounceType: 'hard', reason: 'sandbox: 550 mailbox unavailable' },
          ]);
        case `complained@${SANDBOX_DOMAIN}`:
          await keep(message, tenantId, emailId);
          return sent([{ type: 'email.delivered' }, { type: 'email.complained', feedbackType: 'abuse' }]);
        default:
          await keep(message, tenantId, emailId);
          return sent([{ type: 'email.delivered' }]);
      }
    },
  };
}
