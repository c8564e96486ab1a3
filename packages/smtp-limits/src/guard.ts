import type { Socket } from 'node:net';
import type { SMTPServer, SMTPServerOptions, SMTPServerSession } from 'smtp-server';
import { clientKeyOf } from './client-key.js';
import type { SmtpListenerLimits } from './limits.js';
import { perMinute } from './per-minute.js';

/** Why the guard refused or ended a connection (metrics, tests). */
export type GuardEvent =
  | 'too_many_connections'
  | 'too_many_client_connections'
  | 'client_rate'
  | 'auth_deadline'
  | 'session_deadline'
  | 'auth_failures'
  | 'recipients_per_connection';

export interface SmtpGuardOptions {
  limits: SmtpListenerLimits;
  /** The listener requires AUTH: `authDeadlineMs` applies until {@link SmtpGuard.authSucceeded}. */
  requiresAuth: boolean;
  /** Name in the `421` replies the guard writes itself. */
  name?: string;
  now?: () => number;
  /** Told about every connection the guard refuses or ends. */
  onEvent?(event: GuardEvent): void;
}

export interface SmtpGuard {
  /** smtp-server options the guard owns: spread them into `new SMTPServer({ ... })`. */
  readonly serverOptions: Pick<SMTPServerOptions, 'maxClients' | 'socketTimeout' | 'closeTimeout'>;
  /**
   * Puts the connection caps and session deadlines in front of `server` (before `listen`): a
   * connection past a cap is answered `421` and closed before smtp-server sees it.
   */
  attach(server: SMTPServer): void;
  /** In `onAuth`, on a refused credential: `reply` as it is, or a closing `421` past the limit. */
  authFailed(session: SMTPServerSession, reply: Error): Error;
  /** In `onAuth`, on success: the session's deadline becomes `sessionDeadlineMs`. */
  authSucceeded(session: SMTPServerSession): void;
  /** First thing in `onMailFrom`: null, or the refusal (421: the client's messages per minute). */
  message(session: SMTPServerSession): Error | null;
  /**
   * First thing in `onRcptTo` (before any lookup): null, or the refusal — 452 past the recipients
   * of one message, 421 past those of the connection or the client's recipients per minute.
   */
  recipient(session: SMTPServerSession): Error | null;
  /** Connections open now, and distinct clients among them. */
  stats(): { connections: number; clients: number };
}

interface Connection {
  key: string;
  client: string;
  released: boolean;
  socket: Socket;
  connectedAt: number;
  authenticated: boolean;
  authFailures: number;
  recipients: number;
  timer: NodeJS.Timeout | undefined;
}

/** An SMTP reply smtp-server sends as is (`responseCode`); a 421 closes the connection. */
export function smtpReply(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

/** smtp-server's connection object, as far as the guard uses it. */
interface LiveConnection {
  remoteAddress: string;
  remotePort: number;
  send(code: number, message: string): void;
}

const keyOf = (address: string | undefined, port: number | undefined) =>
  `${clientKeyOf(address)}#${port ?? 0}`;

/** Writes one reply line straight to a socket and closes it (no SMTP session was made for it). */
function refuse(socket: Socket, line: string): void {
  socket.on('error', () => undefined);
  socket.once('finish', () => socket.destroy());
  setTimeout(() => socket.destroy(), 1000).unref();
  socket.end(`${line}\r\n`);
}

/**
 * The shared guard of an SMTP listener (one per listener): caps on connections in total and per
 * client, a deadline on every session that no trickle of bytes extends, a cap on failed AUTHs per
 * connection, on recipients per message and per connection, and on messages and RCPTs per client
 * per minute. Cheap by construction: a refused connection costs one write, before any parsing.
 */
export function createSmtpGuard(opts: SmtpGuardOptions): SmtpGuard {
  const { limits } = opts;
  const now = opts.now ?? Date.now;
  const name = opts.name ?? 'tern';
  const event = (e: GuardEvent) => opts.onEvent?.(e);
  const open = new Map<string, Connection>();
  const perClient = new Map<string, number>();
  const messages = perMinute(limits.messagesPerMinute, now);
  const rcpts = perMinute(limits.recipientsPerMinute, now);
  let server: SMTPServer | undefined;

  const of = (session: SMTPServerSession) => open.get(keyOf(session.remoteAddress, session.remotePort));

  /** Frees the connection's slots, once (on close of the socket or of the session, whichever first). */
  function release(conn: Connection): void {
    if (conn.released) return;
    conn.released = true;
    clearTimeout(conn.timer);
    if (open.get(conn.key) === conn) open.delete(conn.key);
    const left = (perClient.get(conn.client) ?? 1) - 1;
    if (left > 0) perClient.set(conn.client, left);
    else perClient.delete(conn.client);
  }

  function end(conn: Connection, why: GuardEvent, text: string): void {
    event(why);
    const live = [...(server?.connections ?? [])].find(
      (c: LiveConnection) => keyOf(c.remoteAddress, c.remotePort) === conn.key,
    ) as LiveConnection | undefined;
    // Through the session when there is one (it may speak TLS by now), else on the raw socket.
    try {
      if (live) live.send(421, text);
      else conn.socket.end(`421 4.4.2 ${name} ${text}\r\n`);
    } catch {
      // The socket is going anyway.
    }
    setTimeout(() => {
      conn.socket.destroy();
      release(conn);
    }, 2000).unref();
  }

  function arm(conn: Connection): void {
    clearTimeout(conn.timer);
    const untilSessionEnd = conn.connectedAt + limits.sessionDeadlineMs - now();
    const untilAuth = conn.connectedAt + limits.authDeadlineMs - now();
    const authPending = opts.requiresAuth && !conn.authenticated && untilAuth < untilSessionEnd;
    const wait = Math.max(0, authPending ? untilAuth : untilSessionEnd);
    conn.timer = setTimeout(() => {
      if (authPending) end(conn, 'auth_deadline', 'Authentication time limit reached, closing');
      else end(conn, 'session_deadline', 'Session time limit reached, closing');
    }, wait);
    conn.timer.unref();
  }

  function admit(socket: Socket): boolean {
    const client = clientKeyOf(socket.remoteAddress);
    const held = perClient.get(client) ?? 0;
    let refusal: [GuardEvent, string] | null = null;
    if (open.size >= limits.maxConnections)
      refusal = ['too_many_connections', `421 4.7.0 ${name} Too many connections, try again later`];
    else if (held >= limits.maxConnectionsPerClient)
      refusal = ['too_many_client_connections', `421 4.7.0 ${name} Too many connections from your address`];
    else if (messages.exceeded(client) || rcpts.exceeded(client))
      refusal = ['client_rate', `421 4.7.0 ${name} Too many messages from your address, try later`];
    if (refusal) {
      event(refusal[0]);
      refuse(socket, refusal[1]);
      return false;
    }
    const key = keyOf(socket.remoteAddress, socket.remotePort);
    const conn: Connection = {
      key,
      client,
      released: false,
      socket,
      connectedAt: now(),
      authenticated: false,
      authFailures: 0,
      recipients: 0,
      timer: undefined,
    };
    open.set(key, conn);
    perClient.set(client, held + 1);
    arm(conn);
    // smtp-server drops every listener of the plain socket on STARTTLS: the session's onClose
    // (wrapped in attach) and the deadline release the slot then.
    socket.once('close', () => release(conn));
    return true;
  }

  return {
    serverOptions: {
      // A backstop: the guard refuses first, smtp-server's own check never has to.
      maxClients: limits.maxConnections + 1,
      socketTimeout: limits.idleTimeoutMs,
      closeTimeout: 5_000,
    },
    attach(target) {
      server = target;
      const net = target.server;
      const handlers = net.listeners('connection') as ((socket: Socket) => void)[];
      net.removeAllListeners('connection');
      net.on('connection', (socket: Socket) => {
        if (!admit(socket)) return;
        for (const handler of handlers) handler.call(net, socket);
      });
      const onClose = target.onClose.bind(target);
      target.onClose = (session, callback) => {
        const conn = of(session);
        if (conn) release(conn);
        onClose(session, callback);
      };
    },
    authFailed(session, reply) {
      const conn = of(session);
      if (!conn) return reply;
      conn.authFailures += 1;
      if (conn.authFailures < limits.maxAuthFailures) return reply;
      event('auth_failures');
      return smtpReply(421, `4.7.0 Too many failed authentication attempts, closing`);
    },
    authSucceeded(session) {
      const conn = of(session);
      if (!conn) return;
      conn.authenticated = true;
      arm(conn);
    },
    message(session) {
      const conn = of(session);
      if (!messages.take(conn?.client ?? clientKeyOf(session.remoteAddress)))
        return smtpReply(421, '4.7.0 Too many messages from your address, try later');
      return null;
    },
    recipient(session) {
      const conn = of(session);
      const client = conn?.client ?? clientKeyOf(session.remoteAddress);
      if (conn) {
        conn.recipients += 1;
        if (conn.recipients > limits.maxRecipientsPerConnection) {
          event('recipients_per_connection');
          return smtpReply(421, '4.5.3 Too many recipients on one connection, closing');
        }
      }
      if (!rcpts.take(client)) {
        event('client_rate');
        return smtpReply(421, '4.7.0 Too many recipients from your address, try later');
      }
      if (session.envelope.rcptTo.length >= limits.maxRecipientsPerMessage)
        return smtpReply(
          452,
          `4.5.3 Too many recipients: at most ${limits.maxRecipientsPerMessage} per message`,
        );
      return null;
    },
    stats() {
      return { connections: open.size, clients: perClient.size };
    },
  };
}
