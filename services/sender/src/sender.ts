import {
  DEFAULT_TRACKING,
  type DeliveryEvent,
  formatMailbox,
  isReservedHeader,
  parseMailbox,
  type RenderedMessage,
  type TrackingSettings,
} from '@tern/contracts';
import { attemptEvents, cancelledEvent, renderTemplate } from '@tern/domain';
import { DkimKeyUnreadableError, type SigningKeys } from '@tern/domains';
import type { EventLogConsumer, EventStream } from '@tern/event-log';
import { claimDue, createPoller } from '@tern/jobs';
import type { StoredMessage } from '@tern/sending';
import type pg from 'pg';
import { envelopeSender } from './envelope.js';
import type {
  GetTemplate,
  IsSuppressed,
  MailProvider,
  ProviderFault,
  ProviderResult,
  Signing,
} from './ports.js';
import {
  attemptMaker,
  type Envelope,
  envelopeOfMessage,
  eventsAbout,
  followUpEvent,
  withoutRecipients,
} from './recipients.js';
import { applyTracking } from './tracking.js';

export interface SenderLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

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
  /** The suppression list (`isSuppressed` of `@tern/api`). */
  isSuppressed: IsSuppressed;
  /** Template lookup (`getTemplate` of `@tern/api`); rendering is `renderTemplate` of `@tern/domain`. */
  getTemplate: GetTemplate;
  /**
   * The DKIM keys of the tenants' verified domains (SPEC §20, `createSigningKeys` of
   * `@tern/domains`): a message whose From domain (or a parent) is verified is signed and its
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
  /** Emails handed to the provider at once (each is its own transaction, its outcome its own append). Default 32. */
  concurrency?: number;
  /** Every provider fault (a refused login, a lost connection…): the process's metrics count them. */
  onProviderFault?: (fault: ProviderFault) => void;
  /** While the provider is failing, how often its `check()` is asked whether it works again. Default 30 s. */
  providerCheckIntervalMs?: number;
  /**
   * SPEC §23: emails per second a tenant's mail is handed to the provider at most, when its
   * settings name no `sendRatePerSecond` (SEND_RATE_PER_SECOND). 0 or absent: unlimited.
   */
  defaultSendRatePerSecond?: number;
  now?: () => Date;
  logger?: SenderLogger;
}

/**
 * Whether the provider took the last transaction (issue 24 item 13): failing from the first fault
 * (not about a recipient) until a transaction or a `check()` goes through again.
 */
export type ProviderHealth =
  | { failing: false }
  | { failing: true; since: Date; fault: ProviderFault; faults: number };

export interface Sender {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** One pass over the due-list (claims and sends what is due); returns the emails handled. */
  runOnce(): Promise<number>;
  /** Marks the rows of these consumed email.queued events ready (the consumer's work); exported for tests. */
  markQueued(events: readonly { tenantId: string; emailId: string }[]): Promise<number>;
  /** Whether the provider is failing (`/ready` and the `sender_provider_failing` metric say so). */
  providerHealth(): ProviderHealth;
}

export const SENDER_GROUP = 'tern-sender';

type ClaimedRow = {
  tenant_id: string;
  id: string;
  attempts: number;
  message: StoredMessage;
  bulk: boolean;
};

const silent: SenderLogger = { info() {}, warn() {}, error() {} };

/**
 * The sender (SPEC §11). Two loops:
 * - a consumer of the log (its own group) that turns each `email.queued` of a send into a due
 *   entry of `outgoing_emails` (the row was written by the API before it appended the event);
 * - the due-list worker: claims due rows (`FOR UPDATE SKIP LOCKED`, with a lease, so several
 *   instances never take the same row and a dead one's rows come back), renders, checks the
 *   suppression list, adds tracking, hands each message to the provider in its own transaction,
 *   and appends the outcome to the log before marking the row done.
 * A crash repeats at most the provider transactions in flight (each with the same Message-ID).
 */
export function createSender(opts: SenderOptions): Sender {
  const logger = opts.logger ?? silent;
  const now = opts.now ?? (() => new Date());
  const retryDelays = opts.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  const pollIntervalMs = opts.pollIntervalMs ?? 500;
  const leaseMs = opts.leaseMs ?? 120_000;
  const concurrency = opts.concurrency ?? 32;
  const defaultRate = opts.defaultSendRatePerSecond ?? 0;
  const publicUrl = opts.tracking.publicUrl.replace(/\/+$/, '');
  const messageIdDomain = opts.messageIdDomain ?? (new URL(publicUrl).hostname || 'tern');

  let consumer: EventLogConsumer | null = null;
  let sweeps = 0;
  const providerCheckIntervalMs = opts.providerCheckIntervalMs ?? 30_000;
  let health: ProviderHealth = { failing: false };
  let lastCheck = 0;

  /** Follows the provider's answers: a fault makes it failing, anything else (sent, about a recipient) working. */
  function noteProvider(result: ProviderResult | { fault: ProviderFault } | null): void {
    const fault = result !== null && 'fault' in result ? result.fault : undefined;
    if (fault) {
      opts.onProviderFault?.(fault);
      if (!health.failing) {
        health = { failing: true, since: now(), fault, faults: 1 };
        lastCheck = now().getTime();
        logger.warn({ step: fault.step, code: fault.code }, 'sender: mail provider failing; mail is retried');
      } else {
        health = { ...health, fault, faults: health.faults + 1 };
      }
    } else if (health.failing) {
      logger.info({ faults: health.faults }, 'sender: mail provider works again');
      health = { failing: false };
    }
  }

  /** While failing, asks the provider now and then whether it works again (no mail may be due). */
  async function checkProvider(): Promise<void> {
    if (!health.failing || !opts.provider.check) return;
    if (now().getTime() - lastCheck < providerCheckIntervalMs) return;
    lastCheck = now().getTime();
    const fault = await opts.provider.check();
    noteProvider(fault === null ? null : { fault });
  }

  async function markQueued(events: readonly { tenantId: string; emailId: string }[]): Promise<number> {
    if (events.length === 0) return 0;
    const { rowCount } = await opts.pool.query(
      `UPDATE outgoing_emails o SET state = 'pending', updated_at = $3
         FROM unnest($1::text[], $2::text[]) AS q(t, i)
        WHERE o.tenant_id = q.t AND o.id = q.i AND o.state = 'awaiting_log'`,
      [events.map((e) => e.tenantId), events.map((e) => e.emailId), now()],
    );
    return rowCount ?? 0;
  }

  /**
   * Claims due rows (SPEC §23): transactional mail of every tenant ahead of campaign and sequence
   * mail, then by due time; tenants whose send rate is used up for this second are left out.
   */
  async function claim(limit: number, exhausted: ReadonlySet<string>): Promise<ClaimedRow[]> {
    const at = now();
    return claimDue<ClaimedRow>(
      opts.pool,
      {
        table: 'outgoing_emails',
        alias: 'o',
        keys: ['tenant_id', 'id'],
        due: `((state = 'pending' AND due_at <= $1) OR (state = 'sending' AND lease_until < $1))
              AND NOT (tenant_id = ANY($4::text[]))`,
        orderBy: 'bulk, due_at',
        limit: '$3',
        set: `state = 'sending', attempts = o.attempts + 1, lease_until = $2, updated_at = $1`,
        returning: 'o.tenant_id, o.id, o.attempts, o.message, o.bulk',
      },
      [at, new Date(at.getTime() + leaseMs), limit, [...exhausted]],
    );
  }

  /**
   * The claimed rows the tenants' send rates allow this second (SPEC §23). The allowance is a
   * counter per tenant and second shared by every sender instance; rows past it go back to the
   * due-list (unclaimed, due at the next second) and their tenants join `exhausted`.
   */
  async function withinRate(rows: ClaimedRow[], exhausted: Set<string>): Promise<ClaimedRow[]> {
    const tenants = [...new Set(rows.map((r) => r.tenant_id))];
    const { rows: rates } = await opts.pool.query<{ tenant_id: string; rate: number }>(
      `SELECT t.tenant_id, COALESCE(s.send_rate_per_second, $2::int) AS rate
         FROM unnest($1::text[]) AS t(tenant_id)
         LEFT JOIN tenant_settings s ON s.tenant_id = t.tenant_id`,
      [tenants, defaultRate],
    );
    const limited = new Map(rates.filter((r) => r.rate > 0).map((r) => [r.tenant_id, r.rate]));
    if (limited.size === 0) return rows;
    const at = now();
    const second = new Date(Math.floor(at.getTime() / 1000) * 1000);
    const wanted = new Map<string, number>();
    for (const r of rows)
      if (limited.has(r.tenant_id)) wanted.set(r.tenant_id, (wanted.get(r.tenant_id) ?? 0) + 1);
    const ids = [...wanted.keys()];
    const granted = new Map<string, number>();
    const client = await opts.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO send_rate_counters (tenant_id, second, sent)
         SELECT t, $2, 0 FROM unnest($1::text[]) AS t ON CONFLICT DO NOTHING`,
        [ids, second],
      );
      const { rows: used } = await client.query<{ tenant_id: string; sent: number }>(
        `SELECT tenant_id, sent FROM send_rate_counters WHERE second = $2 AND tenant_id = ANY($1::text[])
          ORDER BY tenant_id FOR UPDATE`,
        [ids, second],
      );
      for (const u of used) {
        const want = wanted.get(u.tenant_id) ?? 0;
        granted.set(u.tenant_id, Math.max(0, Math.min(want, (limited.get(u.tenant_id) ?? 0) - u.sent)));
      }
      await client.query(
        `UPDATE send_rate_counters c SET sent = c.sent + g.n
           FROM unnest($1::text[], $3::int[]) AS g(t, n) WHERE c.tenant_id = g.t AND c.second = $2`,
        [ids, second, ids.map((t) => granted.get(t) ?? 0)],
      );
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
    const keep: ClaimedRow[] = [];
    const back: ClaimedRow[] = [];
    // Transactional rows first within a tenant (the claim returns them in no particular order).
    const ordered = [...rows].sort((a, b) => Number(a.bulk) - Number(b.bulk));
    for (const r of ordered) {
      if (!limited.has(r.tenant_id)) keep.push(r);
      else {
        const left = granted.get(r.tenant_id) ?? 0;
        if (left > 0) {
          granted.set(r.tenant_id, left - 1);
          keep.push(r);
        } else {
          back.push(r);
          exhausted.add(r.tenant_id);
        }
      }
    }
    if (back.length > 0) {
      await opts.pool.query(
        `UPDATE outgoing_emails o
            SET state = 'pending', attempts = o.attempts - 1, lease_until = NULL, due_at = $3, updated_at = $4
           FROM unnest($1::text[], $2::text[]) AS r(t, i)
          WHERE o.tenant_id = r.t AND o.id = r.i AND o.state = 'sending'`,
        [back.map((r) => r.tenant_id), back.map((r) => r.id), new Date(second.getTime() + 1000), at],
      );
    }
    return keep;
  }

  /** Counters of seconds long past. */
  async function pruneRateCounters(): Promise<void> {
    await opts.pool.query('DELETE FROM send_rate_counters WHERE second < $1', [
      new Date(now().getTime() - 60_000),
    ]);
  }

  /** Appends with a few quick retries: the provider already answered, the outcome must reach the log. */
  async function append(events: DeliveryEvent[]): Promise<void> {
    let wait = 100;
    for (let attempt = 1; ; attempt++) {
      try {
        await opts.log.append(events);
        return;
      } catch (error) {
        if (attempt >= 5) throw error;
        logger.warn({ err: error, attempt }, 'sender: append failed; retrying');
        await new Promise((r) => setTimeout(r, wait));
        wait *= 2;
      }
    }
  }

  /** What one attempt ends with: its events and the row's next state. */
  interface Outcome {
    row: ClaimedRow;
    events: DeliveryEvent[];
    state: 'done' | 'pending';
    dueAt: Date | null;
    error: string | null;
    /** The message went to the provider: its outcome counts only while the claim is still ours. */
    handed: boolean;
  }

  /** The rows still claimed by this attempt (same `attempts`, still `sending`), as `tenant\u0000id`. */
  async function stillMine(rows: readonly ClaimedRow[]): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const { rows: mine } = await opts.pool.query<{ tenant_id: string; id: string }>(
      `SELECT o.tenant_id, o.id FROM outgoing_emails o
         JOIN unnest($1::text[], $2::text[], $3::int[]) AS q(t, i, a)
           ON o.tenant_id = q.t AND o.id = q.i AND o.attempts = q.a
        WHERE o.state = 'sending'`,
      [rows.map((r) => r.tenant_id), rows.map((r) => r.id), rows.map((r) => r.attempts)],
    );
    return new Set(mine.map((r) => `${r.tenant_id}\u0000${r.id}`));
  }

  /** Marks the rows of a round done or due again, in one statement. */
  async function finish(outcomes: readonly Outcome[]): Promise<void> {
    if (outcomes.length === 0) return;
    await opts.pool.query(
      `UPDATE outgoing_emails o
          SET state = f.state, due_at = COALESCE(f.due, o.due_at), lease_until = NULL, last_error = f.err,
              updated_at = $6
         FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[]) AS f(t, i, state, due, err)
        WHERE o.tenant_id = f.t AND o.id = f.i AND o.state = 'sending'`,
      [
        outcomes.map((o) => o.row.tenant_id),
        outcomes.map((o) => o.row.id),
        outcomes.map((o) => o.state),
        outcomes.map((o) => o.dueAt),
        outcomes.map((o) => o.error),
        now(),
      ],
    );
  }

  async function tenantTracking(tenantId: string): Promise<TrackingSettings> {
    const { rows } = await opts.pool.query<{ opens: boolean | null; clicks: boolean | null }>(
      'SELECT tracking_opens AS opens, tracking_clicks AS clicks FROM tenant_settings WHERE tenant_id = $1',
      [tenantId],
    );
    const r = rows[0];
    return { opens: r?.opens ?? DEFAULT_TRACKING.opens, clicks: r?.clicks ?? DEFAULT_TRACKING.clicks };
  }

  /**
   * How the message is signed: the verified domain covering its From address, or null. A key that
   * cannot be unsealed (another WEBHOOK_SECRETS_KEY) is an error no retry mends.
   */
  async function signingOf(
    row: ClaimedRow,
  ): Promise<{ signing: Signing | null; bounceHost: string | null } | { error: string }> {
    const from = parseMailbox(row.message.from)?.address ?? row.message.from;
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

  /** The message as the provider gets it, or the reason it cannot be built. */
  async function build(
    row: ClaimedRow,
    signing: Signing | null,
    trackingOf: (tenantId: string) => Promise<TrackingSettings>,
  ): Promise<RenderedMessage | { error: string }> {
    const m = row.message;
    let parts = { subject: m.subject ?? '', html: m.html ?? null, text: m.text ?? null };
    if (m.templateId !== undefined) {
      const template = await opts.getTemplate(opts.pool, row.tenant_id, m.templateId);
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
      const tracking = await trackingOf(row.tenant_id);
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
      from: canonicalFrom(m.from),
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
        'X-Tern-Email-Id': row.id,
      },
      dkim: signing && { domain: signing.dkim.domain, selector: signing.dkim.selector },
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
  async function attempt(
    row: ClaimedRow,
    trackingOf: (tenantId: string) => Promise<TrackingSettings>,
  ): Promise<Outcome> {
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
    const envelope = envelopeOfMessage(row.message);
    const suppressed = await Promise.all(
      envelope.map((r) => opts.isSuppressed(opts.pool, row.tenant_id, r.address)),
    );
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
    const envelopeFrom =
      'signing' in signed
        ? envelopeSender(opts.tracking.secret, row.tenant_id, row.id, signed.bounceHost ?? opts.bounceDomain)
        : null;
    const message = 'error' in signed ? signed : await build(sendable, signing, trackingOf);
    if ('error' in message) {
      return done(
        [
          ...droppedEvents,
          ...eventsFor(row, opts.provider.name, { kind: 'failed', reason: message.error }, true),
        ],
        message.error,
      );
    }
    let result: ProviderResult;
    try {
      result = await opts.provider.send(message, {
        tenantId: row.tenant_id,
        emailId: row.id,
        ...(signing ? { signing } : {}),
        ...(envelopeFrom ? { envelopeFrom } : {}),
      });
    } catch (error) {
      result = {
        kind: 'delayed',
        reason: error instanceof Error ? error.message : String(error),
        fault: { step: 'API', code: 'exception' },
      };
    }
    noteProvider(result);
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

  /**
   * One claim round: every attempt, then their outcomes in one append and the rows in one update.
   * A crash before the append repeats the round's provider transactions (the same Message-IDs), as
   * a crash mid-send always could; after it, the consumer's duplicates change nothing.
   */
  async function round(rows: readonly ClaimedRow[]): Promise<void> {
    const tracking = new Map<string, Promise<TrackingSettings>>();
    const trackingOf = (tenantId: string) => {
      let t = tracking.get(tenantId);
      if (t === undefined) {
        t = tenantTracking(tenantId);
        tracking.set(tenantId, t);
      }
      return t;
    };
    const settled = await Promise.allSettled(rows.map((row) => attempt(row, trackingOf)));
    const outcomes: Outcome[] = [];
    for (const r of settled) {
      if (r.status === 'fulfilled') outcomes.push(r.value);
      else
        logger.error(
          { err: r.reason },
          'sender: email not finished; its lease will expire and it is retried',
        );
    }
    const handed = outcomes.filter((o) => o.handed);
    const mine = await stillMine(handed.map((o) => o.row));
    const kept = outcomes.filter((o) => {
      if (!o.handed || mine.has(`${o.row.tenant_id}\u0000${o.row.id}`)) return true;
      // The provider took longer than the lease: another instance claimed the email again and
      // owns its outcome. Appending ours too would put two answers on one timeline.
      logger.warn(
        { emailId: o.row.id, attempt: o.row.attempts },
        'sender: lease lost while sending; outcome dropped',
      );
      return false;
    });
    const events = kept.flatMap((o) => o.events);
    if (events.length > 0) await append(events);
    await finish(kept);
  }

  /** Cancelled rows whose email.cancelled did not reach the log (the API answered, then crashed or the log failed). */
  async function sweepCancelling(): Promise<void> {
    const { rows } = await opts.pool.query<{ tenant_id: string; id: string }>(
      `SELECT tenant_id, id FROM outgoing_emails
        WHERE state = 'cancelling' AND updated_at < $1 ORDER BY updated_at LIMIT 100`,
      [new Date(now().getTime() - 5_000)],
    );
    if (rows.length === 0) return;
    await append(rows.map((r) => cancelledEvent(r.tenant_id, r.id, now())));
    await opts.pool.query(
      `UPDATE outgoing_emails o SET state = 'cancelled' FROM unnest($1::text[], $2::text[]) AS c(t, i)
        WHERE o.tenant_id = c.t AND o.id = c.i AND o.state = 'cancelling'`,
      [rows.map((r) => r.tenant_id), rows.map((r) => r.id)],
    );
  }

  /** Idempotency keys live 24 h (SPEC §11); older ones are dropped in small batches. */
  async function pruneIdempotencyKeys(): Promise<void> {
    await opts.pool.query(
      `DELETE FROM idempotency_keys WHERE ctid IN (
         SELECT ctid FROM idempotency_keys WHERE created_at < $1 LIMIT 1000)`,
      [new Date(now().getTime() - 25 * 3600_000)],
    );
  }

  async function runOnce(): Promise<number> {
    await checkProvider();
    if (sweeps % 20 === 0) await sweepCancelling();
    if (sweeps % 120 === 0) await pruneRateCounters();
    if (sweeps % 1200 === 0) await pruneIdempotencyKeys();
    sweeps++;
    let handled = 0;
    const exhausted = new Set<string>();
    for (;;) {
      const claimed = await claim(concurrency, exhausted);
      if (claimed.length === 0) return handled;
      const rows = await withinRate(claimed, exhausted);
      await round(rows);
      handled += rows.length;
    }
  }

  const poller = createPoller({
    name: 'sender',
    intervalMs: pollIntervalMs,
    run: runOnce,
    onError: (error) => logger.warn({ err: error }, 'sender: due-list pass failed; trying again'),
  });
  const wake = () => poller.wake();

  return {
    markQueued,
    runOnce,
    providerHealth: () => health,
    async start() {
      consumer = await opts.log.consume({
        group: opts.group ?? SENDER_GROUP,
        fromBeginning: true,
        maxBatchSize: 1000,
        maxWaitMs: 50,
        async handle({ events }) {
          // Dead letters are the projector's; an email.queued that is not Tern's send moves no row.
          const queued = events.filter((e) => e.type === 'email.queued');
          if ((await markQueued(queued)) > 0) wake();
        },
      });
      poller.start();
      logger.info({ group: opts.group ?? SENDER_GROUP, provider: opts.provider.name }, 'sender started');
    },
    async stop() {
      const stopping = poller.stop();
      await consumer?.stop();
      consumer = null;
      await stopping;
      await opts.provider.close?.();
    },
  };
}

/** `from` as one unambiguous mailbox; a value no parser reads (never accepted by the API) is kept as it is. */
function canonicalFrom(from: string): string {
  const mailbox = parseMailbox(from);
  return mailbox === null ? from : formatMailbox(mailbox);
}
