import { createCoalescer, silentLogger } from '@tern/kernel';
import {
  createSmtpGuard,
  DEFAULT_SMTP_LISTENER_LIMITS,
  type SmtpGuard,
  type SmtpListenerLimits,
  serveGuarded,
  smtpReply,
} from '@tern/smtp-limits';
import { SMTPServer, type SMTPServerDataStream } from 'smtp-server';
import { createRawCollector, type RawMessage } from './parse.js';
import { type ReceiveDeps, receiveMessage } from './receive.js';
import { markAnnouncedMany } from './store.js';

export interface InboundListenerOptions extends ReceiveDeps {
  host: string;
  /** INBOUND_SMTP_PORT (0: any free port). */
  port: number;
  /** INBOUND_MAX_BYTES: larger messages → 552. */
  maxBytes: number;
  /** The tenants a recipient address belongs to (none: 550 5.1.1). */
  tenantsOf(address: string): Promise<string[]>;
  /** The STARTTLS pair (SMTP_TLS_*): offered, never required. */
  tls?: { key: string | Buffer; cert: string | Buffer } | undefined;
  /** The name in the greeting and mailauth's `mta` (INBOUND_MX_HOST). */
  hostname: string;
  /** The limits every SMTP listener shares (SMTP_LISTEN_*; packages/smtp-limits). */
  limits?: SmtpListenerLimits;
}

export interface InboundListener {
  start(): Promise<number>;
  /** Connections open now, and distinct clients among them (the guard's count). */
  stats: SmtpGuard['stats'];
  stop(): Promise<void>;
}

/**
 * Reads DATA up to `max` bytes (the rest is drained and dropped); null when over. The bytes are
 * copied into a few slabs as they come and never concatenated: the message is held once
 * (docs/inbound.md, "Memory of a large message").
 */
function readAll(stream: SMTPServerDataStream, max: number): Promise<RawMessage | null> {
  return new Promise((resolve, reject) => {
    const raw = createRawCollector();
    let over = false;
    stream.on('data', (chunk: Buffer) => {
      if (over) return;
      if (raw.size + chunk.length > max) {
        over = true;
        raw.clear();
      } else raw.push(chunk);
    });
    stream.on('error', reject);
    stream.on('end', () => resolve(over || stream.sizeExceeded ? null : raw.message()));
  });
}

/**
 * The MX listener (SPEC §24): accepts a recipient only at a tenant's receiving address (550 5.1.1
 * otherwise, so it is never a relay), takes messages up to `maxBytes` (552 past it), and answers
 * 250 only once `receiveMessage` has the message in the store and the log — 451 otherwise, so the
 * sending MTA retries.
 */
export function createInboundListener(opts: InboundListenerOptions): InboundListener {
  const logger = opts.logger ?? silentLogger;
  // The same guard as submission and the bounce mailbox (issue 40): caps per client and in total,
  // a session deadline no trickle of bytes extends, recipients per message/connection/minute.
  const guard = createSmtpGuard({
    limits: opts.limits ?? DEFAULT_SMTP_LISTENER_LIMITS,
    requiresAuth: false,
    name: opts.hostname,
  });
  const tenants = new Map<string, Map<string, string[]>>();
  // Group commit across sessions: the `email.received` of arrivals finishing together go to the
  // log in one append, and their rows are marked announced in one UPDATE. Each session's 250 still
  // waits for its own batch to be durable.
  const append = createCoalescer<Parameters<ReceiveDeps['log']['append']>[0]>((batches) =>
    opts.log.append(batches.flat()),
  );
  const announce = createCoalescer<string>((ids) => markAnnouncedMany(opts.pool, ids));
  const deps: ReceiveDeps = {
    ...opts,
    log: { append: (events) => append(events) },
    markAnnounced: (id) => announce(id),
  };

  const server = new SMTPServer({
    ...guard.serverOptions,
    name: opts.hostname,
    banner: 'Tern inbound',
    authOptional: true,
    disabledCommands: opts.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(opts.tls ? { key: opts.tls.key, cert: opts.tls.cert } : {}),
    hideSTARTTLS: false,
    disableReverseLookup: true,
    size: opts.maxBytes,
    logger: false,
    onClose(session) {
      tenants.delete(session.id);
    },
    onMailFrom(_address, session, callback) {
      const refused = guard.message(session);
      if (refused) return callback(refused);
      tenants.set(session.id, new Map());
      callback();
    },
    onRcptTo(address, session, callback) {
      // Counted (per message, connection, client and minute) before any lookup.
      const refused = guard.recipient(session);
      if (refused) return callback(refused);
      opts.tenantsOf(address.address).then(
        (found) => {
          if (found.length === 0) return callback(smtpReply(550, '5.1.1 No such mailbox here'));
          const map = tenants.get(session.id) ?? new Map<string, string[]>();
          map.set(address.address, found);
          tenants.set(session.id, map);
          callback();
        },
        (error: unknown) => {
          logger.warn({ err: error }, 'inbound: recipient check failed');
          callback(smtpReply(451, '4.3.0 Try again later'));
        },
      );
    },
    onData(stream, session, callback) {
      readAll(stream, opts.maxBytes)
        .then(async (raw) => {
          if (raw === null) return callback(smtpReply(552, `5.3.4 Message exceeds ${opts.maxBytes} bytes`));
          const map = tenants.get(session.id) ?? new Map<string, string[]>();
          const recipients = session.envelope.rcptTo.flatMap((r) =>
            (map.get(r.address) ?? []).map((tenantId) => ({ address: r.address, tenantId })),
          );
          try {
            const ids = await receiveMessage(deps, raw, {
              recipients,
              clientIp: session.remoteAddress,
              helo: session.hostNameAppearsAs ?? '',
              sender: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              mta: opts.hostname,
            });
            callback(null, `2.0.0 Stored as ${ids.join(' ')}`);
          } catch (error) {
            logger.warn({ err: error }, 'inbound: message not stored; the sender will retry');
            callback(smtpReply(451, '4.3.0 Temporary failure; try again later'));
          }
        })
        .catch((error: unknown) => {
          logger.warn({ err: error }, 'inbound: message unreadable');
          callback(smtpReply(451, '4.3.0 Temporary failure; try again later'));
        });
    },
  });
  const listener = serveGuarded(server, guard, {
    port: opts.port,
    host: opts.host,
    onError: (error) => logger.warn({ err: error }, 'inbound: connection error'),
  });
  return { start: listener.listen, stats: listener.stats, stop: listener.close };
}
