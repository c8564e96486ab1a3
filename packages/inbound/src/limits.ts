import type { SMTPServer, SMTPServerOptions, SMTPServerSession } from 'smtp-server';

/**
 * The connection limits of the inbound listener (SPEC §24), in one place so that moving to the
 * shared `@tern/smtp-limits` package is a change of this file only: connections per client address
 * and in total, a deadline per session however slowly bytes arrive, recipients per message and per
 * connection, messages per client per minute. Each refusal is a clear SMTP reply (421/452).
 */
export interface InboundLimits {
  maxConnections: number;
  maxConnectionsPerClient: number;
  sessionDeadlineMs: number;
  idleTimeoutMs: number;
  recipientsPerMessage: number;
  recipientsPerConnection: number;
  messagesPerClientPerMinute: number;
}

export const DEFAULT_INBOUND_LIMITS: InboundLimits = {
  maxConnections: 500,
  maxConnectionsPerClient: 20,
  sessionDeadlineMs: 10 * 60_000,
  idleTimeoutMs: 60_000,
  recipientsPerMessage: 100,
  recipientsPerConnection: 1000,
  messagesPerClientPerMinute: 600,
};

export const smtpReply = (code: number, message: string): Error =>
  Object.assign(new Error(message), { responseCode: code });

interface Connection {
  id: string;
  send(code: number, text: string): void;
  close(): void;
}

/** The hooks a listener calls; `serverOptions` go into `new SMTPServer`. */
export function inboundLimits(limits: InboundLimits, now: () => number = Date.now) {
  const perClient = new Map<string, number>();
  const perSession = new Map<string, { client: string; recipients: number; timer: NodeJS.Timeout }>();
  let window = Math.floor(now() / 60_000);
  let counts = new Map<string, number>();
  const roll = () => {
    const current = Math.floor(now() / 60_000);
    if (current !== window) {
      window = current;
      counts = new Map();
    }
  };
  let server: SMTPServer | undefined;
  const serverOptions: Partial<SMTPServerOptions> = {
    maxClients: limits.maxConnections,
    socketTimeout: limits.idleTimeoutMs,
    closeTimeout: 5_000,
  };
  return {
    serverOptions,
    /** The server the deadlines close connections of. */
    attach(s: SMTPServer) {
      server = s;
    },
    /** At connect: null to go on, or the refusal. */
    connect(session: SMTPServerSession): Error | null {
      const client = session.remoteAddress;
      roll();
      if ((counts.get(client) ?? 0) >= limits.messagesPerClientPerMinute)
        return smtpReply(421, '4.7.0 Too many messages from your address; try again later');
      const open = perClient.get(client) ?? 0;
      if (open >= limits.maxConnectionsPerClient)
        return smtpReply(421, '4.7.0 Too many connections from your address; try again later');
      perClient.set(client, open + 1);
      const timer = setTimeout(() => {
        for (const c of (server as unknown as { connections: Set<Connection> } | undefined)?.connections ??
          []) {
          if (c.id !== session.id) continue;
          c.send(421, '4.4.2 Session deadline reached; closing');
          c.close();
        }
      }, limits.sessionDeadlineMs);
      timer.unref();
      perSession.set(session.id, { client, recipients: 0, timer });
      return null;
    },
    close(session: SMTPServerSession) {
      const s = perSession.get(session.id);
      if (!s) return;
      clearTimeout(s.timer);
      perSession.delete(session.id);
      const open = (perClient.get(s.client) ?? 1) - 1;
      if (open <= 0) perClient.delete(s.client);
      else perClient.set(s.client, open);
    },
    /** At RCPT TO: null to go on, or the refusal. */
    recipient(session: SMTPServerSession): Error | null {
      if (session.envelope.rcptTo.length >= limits.recipientsPerMessage)
        return smtpReply(
          452,
          `4.5.3 Too many recipients: at most ${limits.recipientsPerMessage} per message`,
        );
      const s = perSession.get(session.id);
      if (s) {
        if (s.recipients >= limits.recipientsPerConnection)
          return smtpReply(452, '4.5.3 Too many recipients on this connection');
        s.recipients++;
      }
      return null;
    },
    /** At the end of DATA: false when the client is over its messages per minute. */
    takeMessage(client: string): boolean {
      roll();
      const n = (counts.get(client) ?? 0) + 1;
      counts.set(client, n);
      return n <= limits.messagesPerClientPerMinute;
    },
  };
}
