import { createHash } from 'node:crypto';
import { type DeliveryEvent, envelopeOf } from '@tern/contracts';
import { feedbackEvents } from '@tern/domain';
import { sendsByIdAnyCase } from '@tern/sending';
import { parseVerpLocalPart, verpMatches } from '@tern/sending-domains';
import type pg from 'pg';
import type { DsnRecipient, Report } from './report.js';

/** An email of Tern's found through a genuine VERP address. */
export interface FeedbackTarget {
  tenantId: string;
  emailId: string;
  /** Every recipient of the message, lower case; `to` first. Empty once the recipient was erased. */
  recipients: string[];
  /**
   * The one recipient the VERP address proves (issue 40, item 2): the one its per-recipient form
   * names, or the only recipient of a single-recipient email; null when it proves none (the
   * whole-email form on a message to several): then no report about it is applied.
   */
  proven: string | null;
}

/** `b+<emailId>[=<n>].<hmac>` local parts in a text (the report's Original-Mail-From, returned headers). */
const VERP_IN_TEXT = /\bb\+[A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,127}(?:=\d{1,3})?\.[0-9a-fA-F]{16}@/g;

/** The VERP local parts of `text`, at most `max`, without duplicates. */
export function verpLocalParts(text: string, max = 5): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(VERP_IN_TEXT)) {
    found.add(m[0].slice(0, -1));
    if (found.size >= max) break;
  }
  return [...found];
}

/**
 * The email a VERP local part names, when its HMAC is the one Tern wrote for that email's tenant;
 * null for anything else (not a VERP address, an unknown email, a forged or altered MAC).
 */
export async function resolveVerp(
  pool: Pick<pg.Pool, 'query'>,
  secret: string,
  localPart: string,
): Promise<FeedbackTarget | null> {
  const claim = parseVerpLocalPart(localPart);
  if (!claim) return null;
  for (const row of await sendsByIdAnyCase(pool, claim.emailId)) {
    if (!verpMatches(secret, row.tenant_id, row.id, claim.mac, claim.recipientIndex)) continue;
    const m = row.message;
    // The sender's own envelope (to, cc, bcc, each once): the order its per-recipient index names.
    const recipients = m.erased === true ? [] : envelopeOf(m).map((r) => r.address.toLowerCase());
    const proven =
      claim.recipientIndex !== null
        ? (recipients[claim.recipientIndex] ?? null)
        : recipients.length === 1
          ? recipients[0]!
          : null;
    return { tenantId: row.tenant_id, emailId: row.id, recipients, proven };
  }
  return null;
}

const hash = (...parts: string[]) =>
  createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 24);

/**
 * The DSN entries about the one recipient the VERP address proves (issue 40, item 2): the entries
 * naming it, or — a relay may rewrite the address it reports — the only entry of a report that
 * names no other recipient of the email. An entry about anyone else is dropped, so a recipient of
 * a message can never make Tern record a bounce of another. On a message to several, the event
 * names its recipient.
 */
function entriesFor(
  target: FeedbackTarget,
  recipients: readonly DsnRecipient[],
): { entry: DsnRecipient; recipient?: string }[] {
  const proven = target.proven;
  if (proven === null || target.recipients.length === 0) return [];
  const names = (r: DsnRecipient, a: string) => r.recipient === a || r.originalRecipient === a;
  const named = recipients.filter((r) => names(r, proven));
  const own =
    named.length > 0
      ? named
      : recipients.length === 1 && !target.recipients.some((a) => names(recipients[0]!, a))
        ? [recipients[0]!]
        : [];
  const recipient = target.recipients.length > 1 ? proven : undefined;
  return own.map((entry) => (recipient === undefined ? { entry } : { entry, recipient }));
}

/**
 * The events a report appends for its email (SPEC §21): per DSN recipient, `failed` → bounced
 * (5.x.x hard, 4.x.x soft, no status: hard — `failed` is final), `delayed` → delayed,
 * `delivered`/`relayed`/`expanded` → delivered; an ARF report → complained. `reportId` names the
 * report (its Message-ID, else a hash of its bytes): the same report twice gives the same ids.
 */
export function eventsOf(
  target: FeedbackTarget,
  report: Report,
  reportId: string,
  at: Date,
): DeliveryEvent[] {
  if (report.kind === 'other') return [];
  if (report.kind === 'arf') {
    // A complaint is about the recipient it names (Original-Rcpt-To) and the one the VERP
    // address proves; both must agree (issue 40, item 2).
    const proven = target.proven;
    if (proven === null || target.recipients.length === 0) return [];
    if (report.originalRcptTo !== null && report.originalRcptTo !== proven) return [];
    const recipient = target.recipients.length > 1 ? proven : undefined;
    const events = feedbackEvents(target.tenantId, target.emailId, hash('arf', reportId), at, recipient);
    return [events.complained({ feedbackType: report.feedbackType })];
  }
  return entriesFor(target, report.recipients).map(({ entry, recipient }) => {
    const events = feedbackEvents(
      target.tenantId,
      target.emailId,
      hash('dsn', reportId, entry.recipient ?? '', entry.action, entry.status ?? ''),
      at,
      recipient,
    );
    const said = entry.diagnostic ?? entry.status ?? entry.action;
    switch (entry.action) {
      case 'failed':
        return events.bounced({
          bounceType: entry.status?.startsWith('4.') ? 'soft' : 'hard',
          reason: `DSN: ${said}`,
          smtpStatus: entry.status ?? undefined,
          diagnostic: entry.diagnostic ?? undefined,
        });
      case 'delayed':
        return events.delayed({ reason: `DSN: ${said}` });
      case 'delivered':
      case 'relayed':
      case 'expanded':
        return events.delivered();
      default: {
        const exhaustive: never = entry.action;
        throw new Error(`unknown DSN action ${String(exhaustive)}`);
      }
    }
  });
}
