import { createHash } from 'node:crypto';
import type { DeliveryEvent } from '@tern/contracts';
import { type Logger, silentLogger } from '@tern/kernel';
import { isVerifiedBounceHost } from '@tern/sending-domains';
import {
  createSmtpGuard,
  DEFAULT_SMTP_LISTENER_LIMITS,
  type SmtpListenerLimits,
  serveGuarded,
  smtpReply,
} from '@tern/smtp-limits';
import type pg from 'pg';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { eventsOf, type FeedbackTarget, resolveVerp, verpLocalParts } from './feedback.js';
import { createHostCache } from './host-cache.js';
import { type Report, readReport } from './report.js';

export interface BounceMailboxOptions {
  pool: pg.Pool;
  /** Where the events go (the sealed event stream). */
  log: { append(events: readonly DeliveryEvent[]): Promise<void> };
  /** TRACKING_SECRET: the key of the VERP HMAC (packages/sending-domains verp.ts). */
  secret: string;
  /** BOUNCE_DOMAIN: accepted besides the bounce hosts of verified domains. */
  bounceDomain?: string | undefined;
  host: string;
  /** BOUNCE_SMTP_PORT (0: any free port). */
  port: number;
  /** BOUNCE_SMTP_MAX_BYTES: larger messages are refused with 552. */
  maxBytes: number;
  /** BOUNCE_SMTP_RATE_PER_MINUTE: messages per client address per minute; then 421. */
  ratePerMinute: number;
  /** The connection limits and deadlines every SMTP listener shares (SMTP_LISTEN_*); default the defaults. */
  limits?: SmtpListenerLimits;
  /** How long a bounce host's check is remembered (ms); default 60 s. */
  hostCacheMs?: number;
  /** Longest time one message may take to parse; then it is refused with 451. Default 10 s. */
  parseTimeoutMs?: number;
  /** Name in the greeting. */
  hostname?: string;
  now?: () => Date;
  logger?: Logger;
  /** Told about every message handled (tests, metrics). */
  onMessage?(outcome: MessageOutcome): void;
}

/** How one message ended: `applied` (events appended) or `dropped` with why. */
export type MessageOutcome =
  | { kind: 'applied'; events: DeliveryEvent[]; report: Report['kind'] }
  | { kind: 'dropped'; reason: 'not_a_report' | 'no_genuine_verp' | 'no_matching_recipient' };

export interface BounceMailbox {
  /** Listens; resolves with the port. */
  start(): Promise<number>;
  /** Connections open now and distinct clients among them (the guard's count). */
  stats(): { connections: number; clients: number };
  stop(): Promise<void>;
}

/** Reads a message stream into memory, up to `max` bytes (the rest is drained, never kept). */
function readAll(stream: SMTPServerDataStream, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) over = true;
      if (!over) chunks.push(chunk);
    });
    stream.on('error', reject);
    stream.on('end', () => resolve(over || stream.sizeExceeded ? null : Buffer.concat(chunks)));
  });
}

/**
 * The bounce mailbox (SPEC §21): an SMTP listener that takes mail only for the bounce hosts of
 * verified domains and BOUNCE_DOMAIN (anything else: 550 at RCPT TO), reads DSNs and ARF reports,
 * ties each to its email by the VERP address it was sent to (or, for an ARF report, the VERP
 * address it quotes: Original-Mail-From or the returned message), checks the HMAC, and appends
 * the events. A message answered 250 is in the log or was dropped on purpose (not a report, no
 * genuine VERP address); a log that cannot take it → 451, so the MTA tries again later.
 */
export function createBounceMailbox(opts: BounceMailboxOptions): BounceMailbox {
  const logger = opts.logger ?? silentLogger;
  const now = opts.now ?? (() => new Date());
  const parseTimeoutMs = opts.parseTimeoutMs ?? 10_000;
  const bounceDomain = opts.bounceDomain?.toLowerCase();
  const guard = createSmtpGuard({
    limits: { ...(opts.limits ?? DEFAULT_SMTP_LISTENER_LIMITS), messagesPerMinute: opts.ratePerMinute },
    requiresAuth: false,
    name: opts.hostname ?? 'tern-bounce',
    now: () => now().getTime(),
  });
  // One lookup per host and minute, however many RCPTs name it (issue 40, item 6).
  const hosts = createHostCache((host) => isVerifiedBounceHost(opts.pool, host), {
    ttlMs: opts.hostCacheMs ?? 60_000,
    now: () => now().getTime(),
  });

  async function acceptsHost(host: string): Promise<boolean> {
    if (bounceDomain !== undefined && host === bounceDomain) return true;
    if (host === '' || host.length > 253) return false;
    return hosts.get(host);
  }

  async function targetsOf(
    session: SMTPServerSession,
    raw: Buffer,
    report: Report,
  ): Promise<FeedbackTarget[]> {
    const locals = session.envelope.rcptTo.map((r) => r.address.slice(0, r.address.lastIndexOf('@')));
    // An ARF report goes to the address registered with the feedback loop, not to a VERP
    // address: the VERP address it quotes names the email (its MAC still decides).
    if (report.kind === 'arf') {
      if (report.originalMailFrom) locals.push(report.originalMailFrom.split('@')[0] ?? '');
      locals.push(...verpLocalParts(raw.toString('latin1')));
    }
    const targets = new Map<string, FeedbackTarget>();
    for (const local of locals.slice(0, 10)) {
      const target = await resolveVerp(opts.pool, opts.secret, local);
      if (target) targets.set(`${target.tenantId}\u0000${target.emailId}`, target);
      // An ARF report speaks of one message: the first genuine address is it.
      if (report.kind === 'arf' && targets.size > 0) break;
    }
    return [...targets.values()];
  }

  async function handle(session: SMTPServerSession, raw: Buffer): Promise<MessageOutcome> {
    const { report, messageId } = await readReport(raw, parseTimeoutMs);
    if (report.kind === 'other') return { kind: 'dropped', reason: 'not_a_report' };
    const targets = await targetsOf(session, raw, report);
    if (targets.length === 0) return { kind: 'dropped', reason: 'no_genuine_verp' };
    const reportId = messageId ?? createHash('sha256').update(raw).digest('hex');
    const at = now();
    const events = targets.flatMap((t) => eventsOf(t, report, reportId, at));
    if (events.length === 0) return { kind: 'dropped', reason: 'no_matching_recipient' };
    await opts.log.append(events);
    return { kind: 'applied', events, report: report.kind };
  }

  const server = new SMTPServer({
    ...guard.serverOptions,
    name: opts.hostname ?? 'tern-bounce',
    banner: 'Tern bounce mailbox',
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    disableReverseLookup: true,
    size: opts.maxBytes,
    logger: false,
    onMailFrom(_address, session, callback) {
      callback(guard.message(session) ?? undefined);
    },
    onRcptTo(address, session, callback) {
      // Counted (per message, connection, client and minute) before any lookup.
      const refused = guard.recipient(session);
      if (refused) return callback(refused);
      const at = address.address.lastIndexOf('@');
      const host = at > 0 ? address.address.slice(at + 1).toLowerCase() : '';
      acceptsHost(host).then(
        (ok) => callback(ok ? undefined : smtpReply(550, 'No such mailbox here')),
        (error: unknown) => {
          logger.warn({ err: error }, 'bounce mailbox: recipient check failed');
          callback(smtpReply(451, 'Try again later'));
        },
      );
    },
    onData(stream, session, callback) {
      readAll(stream, opts.maxBytes)
        .then(async (raw) => {
          if (raw === null) return callback(smtpReply(552, `Message exceeds ${opts.maxBytes} bytes`));
          let outcome: MessageOutcome;
          try {
            outcome = await handle(session, raw);
          } catch (error) {
            logger.warn({ err: error }, 'bounce mailbox: message not applied; the sender may retry');
            return callback(smtpReply(451, 'Temporary failure; try again later'));
          }
          if (outcome.kind === 'applied') {
            logger.info(
              { report: outcome.report, events: outcome.events.map((e) => ({ id: e.id, type: e.type })) },
              'bounce mailbox: report applied',
            );
          } else {
            logger.info({ reason: outcome.reason }, 'bounce mailbox: message dropped');
          }
          opts.onMessage?.(outcome);
          // One reply whatever the outcome (issue 40, item 3): the answer must not tell a sender
          // whether an address was a recipient of the email.
          callback(null, 'Accepted');
        })
        .catch((error: unknown) => {
          logger.warn({ err: error }, 'bounce mailbox: message unreadable');
          callback(smtpReply(451, 'Temporary failure; try again later'));
        });
    },
  });
  // A client's protocol error or a dropped socket is the client's problem, never the process's.
  const listener = serveGuarded(server, guard, {
    port: opts.port,
    host: opts.host,
    onError: (error) => logger.warn({ err: error }, 'bounce mailbox: connection error'),
  });
  return { start: listener.listen, stats: listener.stats, stop: listener.close };
}
