import {
  DEFAULT_TRACKING,
  type DeliveryEvent,
  formatMailbox,
  isReservedHeader,
  parseMailbox,
  type RenderedMessage,
  recipientsOf,
} from '@tern/contracts';
import { attemptEvents, listUnsubscribeHeaders, renderTemplate } from '@tern/domain';
import { loadAttachments } from '@tern/sending';
import { DkimKeyUnreadableError, type SigningKeys } from '@tern/sending-domains';
import type { SenderTenantSettings } from '@tern/tenant-settings';
import { envelopeSender, envelopeSenders } from './envelope.js';
import { DEFAULT_RETRY_DELAYS_MS, type SenderContext } from './options.js';
import type { ClaimedRow, Outcome } from './outgoing-store.js';
import type { GetTemplate, ProviderResult, Signing } from './ports.js';
import type { ProviderWatch } from './provider-health.js';
import { attemptMaker, type Envelope, eventsAbout, followUpEvent, withoutRecipients } from './recipients.js';
import { applyTracking } from './tracking.js';

/** What every attempt of one claim round shares: read once for the round (`due-list.ts`). */
export interface RoundContext {
  settings: ReadonlyMap<string, SenderTenantSettings>;
  /** The round's suppressed addresses, as `suppressionKey(tenant, address)` (SPEC §13, per address). */
  suppressed: ReadonlySet<string>;
  template: (tenantId: string, id: string) => ReturnType<GetTemplate>;
  /** The row's envelope (to + cc + bcc, each once), computed once per round for the suppression query and the attempt. */
  envelope: (row: ClaimedRow) => Envelope;
}

/** One (tenant, address) of the suppression list, as `RoundContext.suppressed` holds it. */
export const suppressionKey = (tenantId: string, address: string) =>
  `${tenantId}\u0000${address.toLowerCase()}`;

/**
 * One email's attempt (SPEC §11): the erasure and suppression checks, signing, rendering and
 * tracking, the provider; resolves with what the attempt ends with (nothing written yet).
 */
export function createAttempt(ctx: SenderContext, watch: ProviderWatch) {
  const { opts, now } = ctx;
  const retryDelays = opts.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  const publicUrl = opts.tracking.publicUrl.replace(/\/+$/, '');
  const messageIdDomain = opts.messageIdDomain ?? (new URL(publicUrl).hostname || 'tern');

  /**
   * How the message is signed: the verified domain covering its From address, or null. A key that
   * cannot be unsealed (another WEBHOOK_SECRETS_KEY) is an error no retry mends.
   */
  async function signingOf(
    row: ClaimedRow,
  ): Promise<{ signing: Signing | null; bounceHost: string | null } | { error: string }> {
    const from = fromOf(row.message.from).address;
    let key: Awaited<ReturnType<SigningKeys['find']>> = null;
    try {
      key = opts.signingKeys ? await opts.signingKeys.find(row.tenant_id, from) : null;
    } catch (error) {
      if (error instanceof DkimKeyUnreadableError) return { error: error.message };
      throw error;
    }
    if (key === null) {
      return opts.requireVerifiedDomain
        ? { error: `DOMAIN_NOT_VERIFIED: no verified domain of the tenant covers ${from}` }
        : { signing: null, bounceHost: null };
    }
    return {
      signing: { dkim: { domain: key.domain, selector: key.selector, privateKey: key.privateKey } },
      bounceHost: key.bounceDomain,
    };
  }

  /** The `List-Unsubscribe` headers of campaign and sequence mail (`StoredMessage.unsubscribe`). */
  function unsubscribeHeaders(row: ClaimedRow): Record<string, string> {
    const source = row.message.unsubscribe;
    const [email] = recipientsOf(row.message.to);
    if (source === undefined || email === undefined) return {};
    return listUnsubscribeHeaders({
      tenantId: row.tenant_id,
      email,
      source,
      publicUrl,
      secret: opts.tracking.secret,
    });
  }

  /** The message as the provider gets it, or the reason it cannot be built. */
  async function build(
    row: ClaimedRow,
    signing: Signing | null,
    round: RoundContext,
  ): Promise<RenderedMessage | { error: string }> {
    const m = row.message;
    let parts = { subject: m.subject ?? '', html: m.html ?? null, text: m.text ?? null };
    if (m.templateId !== undefined) {
      const template = await round.template(row.tenant_id, m.templateId);
      if (!template) return { error: `template ${m.templateId} not found` };
      parts = renderTemplate(
        {
          subject: m.subject ?? template.subject,
          html: m.html ?? template.html,
          text: m.text ?? template.text,
        },
        m.variables ?? {},
      );
    }
    if (parts.html !== null) {
      const tracking = round.settings.get(row.tenant_id)?.tracking ?? DEFAULT_TRACKING;
      parts.html = applyTracking(parts.html, tracking, {
        secret: opts.tracking.secret,
        publicUrl,
        tenantId: row.tenant_id,
        emailId: row.id,
      });
    }
    return {
      messageId: `<${row.id}@${messageIdDomain}>`,
      // One canonical mailbox (issue 24, item 9): what the API checked is what the provider reads.
      from: fromOf(m.from).canonical,
      to: m.to,
      cc: m.cc ?? [],
      bcc: m.bcc ?? [],
      replyTo: m.replyTo ?? null,
      subject: parts.subject,
      html: parts.html,
      text: parts.text,
      // Tern's own headers replace a caller's in any case (a row stored before the API refused them).
      headers: {
        ...Object.fromEntries(Object.entries(m.headers ?? {}).filter(([name]) => !isReservedHeader(name))),
        ...unsubscribeHeaders(row),
        'X-Tern-Email-Id': row.id,
      },
      dkim: signing && { domain: signing.dkim.domain, selector: signing.dkim.selector },
      ...(m.attachments && m.attachments.length > 0 ? { attachments: m.attachments } : {}),
    };
  }

  /** The outcomes of this attempt (`attemptEvents` of @tern/domain: ids derived from the email and the attempt). */
  const outcomesOf = (row: ClaimedRow) => attemptEvents(row.tenant_id, row.id, row.attempts, now());
  const makerOf = (row: ClaimedRow) => attemptMaker(row.tenant_id, row.id, row.attempts, now);

  function eventsFor(
    row: ClaimedRow,
    provider: string,
    result: ProviderResult,
    finalTry: boolean,
    envelope: Envelope = [],
  ): DeliveryEvent[] {
    // One clock for the attempt's events, 1 ms apart in the order they are built, so the timeline
    // keeps the provider's order (sent before what it reported) whoever each one names.
    const make = makerOf(row);
    const event = make();
    switch (result.kind) {
      case 'sent':
        return [
          event.sent({ provider, messageId: result.messageId, providerMessageId: result.providerMessageId }),
          ...(result.followUps ?? []).map((f) => followUpEvent(envelope, f, make)),
        ];
      case 'delayed':
        return finalTry
          ? [
              event.delayed({ reason: result.reason }),
              event.failed({ reason: `gave up after ${row.attempts} attempts: ${result.reason}` }),
            ]
          : [event.delayed({ reason: result.reason })];
      case 'bounced':
        // Every one of several recipients refused: each its own bounce (SPEC §22).
        if (result.recipients !== undefined && result.recipients.length > 0 && envelope.length > 1)
          return result.recipients.map((r) =>
            eventsAbout(envelope, r.recipient, make).bounced({ bounceType: r.bounceType, reason: r.reason }),
          );
        return [event.bounced({ bounceType: 'hard', reason: result.reason })];
      case 'failed':
        return [event.failed({ reason: result.reason })];
    }
  }

  /** One email's attempt: checks, composing, the provider; what it ends with (nothing written yet). */
  async function attempt(row: ClaimedRow, round: RoundContext): Promise<Outcome> {
    const done = (events: DeliveryEvent[], error: string | null, handed = false): Outcome => ({
      row,
      events,
      state: 'done',
      dueAt: null,
      error,
      handed,
    });
    if (row.message.erased === true) {
      return done([outcomesOf(row).suppressed({ reason: 'recipient erased' })], 'recipient erased');
    }
    // Suppression is per address (SPEC §22): a suppressed address leaves the envelope with its
    // own email.suppressed; the message goes to the others, and is suppressed when none is left.
    const envelope = round.envelope(row);
    const suppressed = envelope.map((r) => round.suppressed.has(suppressionKey(row.tenant_id, r.address)));
    if (envelope.length === 0 || suppressed.every(Boolean)) {
      return done([outcomesOf(row).suppressed({ reason: 'suppressed' })], 'suppressed');
    }
    const dropped = envelope.filter((_, i) => suppressed[i]);
    const droppedEvents = dropped.map((r) =>
      eventsAbout(envelope, r.address, makerOf(row)).suppressed({ reason: 'suppressed' }),
    );
    const sendable: ClaimedRow =
      dropped.length === 0
        ? row
        : {
            ...row,
            message: withoutRecipients(row.message, new Set(dropped.map((r) => r.address.toLowerCase()))),
          };
    const signed = await signingOf(row);
    const signing = 'signing' in signed ? signed.signing : null;
    const bounceHost = 'signing' in signed ? (signed.bounceHost ?? opts.bounceDomain ?? null) : null;
    const envelopeFrom = envelopeSender(opts.tracking.secret, row.tenant_id, row.id, bounceHost);
    // Per recipient, by its place in the stored envelope (before suppressed ones leave it): the
    // index the bounce mailbox resolves (issue 40, item 2).
    const envelopeFromFor = bounceHost
      ? envelopeSenders(opts.tracking.secret, row.tenant_id, row.id, bounceHost, envelope)
      : null;
    const message = 'error' in signed ? signed : await build(sendable, signing, round);
    if ('error' in message) {
      return done(
        [
          ...droppedEvents,
          ...eventsFor(row, opts.provider.name, { kind: 'failed', reason: message.error }, true),
        ],
        message.error,
      );
    }
    // The attachments' bytes, opened from their own table (never from the log); an email whose
    // files are gone (erased, expired) or unreadable fails rather than go out without them.
    const meta = row.message.attachments ?? [];
    const files =
      meta.length === 0
        ? []
        : opts.keyring
          ? await loadAttachments(opts.pool, opts.keyring, row.tenant_id, row.id, meta)
          : { error: 'attachments cannot be opened by this sender (no keyring)' };
    if ('error' in files) {
      return done(
        eventsFor(row, opts.provider.name, { kind: 'failed', reason: files.error }, true),
        files.error,
      );
    }
    let result: ProviderResult;
    try {
      result = await opts.provider.send(message, {
        tenantId: row.tenant_id,
        emailId: row.id,
        ...(files.length > 0 ? { attachments: files } : {}),
        ...(signing ? { signing } : {}),
        ...(envelopeFrom ? { envelopeFrom } : {}),
        ...(envelopeFromFor ? { envelopeFromFor } : {}),
      });
    } catch (error) {
      result = {
        kind: 'delayed',
        reason: error instanceof Error ? error.message : String(error),
        fault: { step: 'API', code: 'exception' },
      };
    }
    watch.note(result);
    const finalTry = row.attempts > retryDelays.length;
    const events = [...droppedEvents, ...eventsFor(row, opts.provider.name, result, finalTry, envelope)];
    if (result.kind === 'delayed' && !finalTry) {
      const wait = result.retryAfterMs ?? retryDelays[row.attempts - 1] ?? 60_000;
      return {
        row,
        events,
        state: 'pending',
        dueAt: new Date(now().getTime() + wait),
        error: result.reason,
        handed: true,
      };
    }
    return done(events, result.kind === 'sent' ? null : result.reason, true);
  }

  return attempt;
}

/**
 * `from` read once (RFC 5322, the costliest parse of an attempt): its address and its canonical
 * form, one unambiguous mailbox (a value no parser reads, never accepted by the API, is kept as it
 * is). A campaign's thousands of emails share one `from`, so the answers are kept (a few hundred).
 */
const froms = new Map<string, { address: string; canonical: string }>();
function fromOf(from: string): { address: string; canonical: string } {
  let known = froms.get(from);
  if (known === undefined) {
    const mailbox = parseMailbox(from);
    known =
      mailbox === null
        ? { address: from, canonical: from }
        : { address: mailbox.address, canonical: formatMailbox(mailbox) };
    if (froms.size >= 500) froms.clear();
    froms.set(from, known);
  }
  return known;
}
