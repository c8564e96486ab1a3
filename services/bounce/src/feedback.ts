import { createHash } from 'node:crypto';
import { type DeliveryEvent, recipientsOf } from '@tern/contracts';
import { feedbackEvents } from '@tern/domain';
import { parseVerpLocalPart, verpMatches } from '@tern/domains';
import { sendsByIdAnyCase } from '@tern/sending';
import type pg from 'pg';
import type { DsnRecipient, Report } from './report.js';

/** An email of Tern's found through a genuine VERP address. */
export interface FeedbackTarget {
  tenantId: string;
  emailId: string;
  /** Every recipient of the message, lower case; `to` first. Empty once the recipient was erased. */
  recipients: string[];
}

/** `b+<emailId>.<hmac>` local parts in a text (the report's Original-Mail-From, returned headers). */
const VERP_IN_TEXT = /\bb\+[A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,127}\.[0-9a-fA-F]{16}@/g;

/** The VERP local parts of `text`, at most `max`, without duplicates. */
export function verpLocalParts(text: string, max = 5): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(VERP_IN_TEXT)) {
    found.add(m[0].slice(0, -1));
    if (found.size >= max) break;
  }
  return [...found];
}

const addressOf = (mailbox: unknown): string | null => {
  if (typeof mailbox !== 'string') return null;
  const angle = /<([^>]+)>/.exec(mailbox);
  return (angle ? angle[1]! : mailbox).trim().toLowerCase() || null;
};

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
    if (!verpMatches(secret, row.tenant_id, row.id, claim.mac)) continue;
    const m = row.message;
    const list = [...recipientsOf(m.to), ...recipientsOf(m.cc), ...recipientsOf(m.bcc)];
    const recipients =
      m.erased === true ? [] : [...new Set(list.map(addressOf).filter((a): a is string => a !== null))];
    return { tenantId: row.tenant_id, emailId: row.id, recipients };
  }
  return null;
}

const hash = (...parts: string[]) =>
  createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 24);

/**
 * The DSN entries about the email, each with the recipient it names (SPEC §22): on a message to
 * one address, its entries (or the only entry: a relay may rewrite the address it reports), about
 * the whole message; on a message to several, the entry of each of its recipients, named.
 * An entry naming no recipient of the message is dropped.
 */
function entriesFor(
  target: FeedbackTarget,
  recipients: readonly DsnRecipient[],
): { entry: DsnRecipient; recipient?: string }[] {
  const ours = target.recipients;
  if (ours.length === 0) return [];
  const named = (r: DsnRecipient) => ours.find((a) => r.recipient === a || r.originalRecipient === a) ?? null;
  if (ours.length === 1) {
    const own = recipients.filter((r) => named(r) !== null);
    if (own.length > 0) return own.map((entry) => ({ entry }));
    return recipients.length === 1 ? [{ entry: recipients[0]! }] : [];
  }
  return recipients.flatMap((entry) => {
    const recipient = named(entry);
    return recipient === null ? [] : [{ entry, recipient }];
  });
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
    if (target.recipients.length === 0) return [];
    const events = feedbackEvents(target.tenantId, target.emailId, hash('arf', reportId), at);
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
