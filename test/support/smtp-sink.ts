// A real SMTP server in the test process (`smtp-server`, the nodemailer project's server) that keeps
// every message it is given: the raw message and its envelope. Integration and e2e tests point
// Tern's SMTP provider (SMTP_URL) at it; `options` add the behaviour a test needs (an `onRcptTo`
// that refuses some recipients, an `onAuth` of a relay requiring a login, DSN advertised…).
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';

/** One message as the sink received it. */
export interface SunkMessage {
  /** The message as sent after DATA (headers and body), UTF-8. */
  raw: string;
  /** The envelope sender (MAIL FROM); `''` for the null sender `<>`. */
  mailFrom: string;
  /** The envelope recipients (RCPT TO) the server accepted. */
  rcptTo: string[];
  /** The DSN parameters of MAIL FROM (RFC 3461: RET, ENVID); read only when DSN is advertised (`hideDSN: false`). */
  mailDsn: unknown;
  /** The DSN parameters (NOTIFY, ORCPT) of each RCPT TO. */
  rcptDsn: unknown[];
}

export interface SmtpSink {
  readonly server: SMTPServer;
  readonly port: number;
  /** `smtp://127.0.0.1:<port>`: what SMTP_URL and `createSmtpProvider` take. */
  readonly url: string;
  /** Every message received so far, in order. */
  readonly received: SunkMessage[];
  close(): Promise<void>;
}

/** smtp-server keeps each command's DSN parameters on the envelope; its types do not declare them. */
type DsnEnvelope = { dsn?: unknown; rcptTo: { address: string; dsn?: unknown }[] };

/**
 * Starts the sink on a free loopback port. By default it accepts every message without login
 * (`authOptional`), offers no STARTTLS and logs nothing; `options` are merged over those defaults
 * (`onData` is the sink's own).
 */
export async function startSmtpSink(options: Omit<SMTPServerOptions, 'onData'> = {}): Promise<SmtpSink> {
  const received: SunkMessage[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    ...options,
    onData(stream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const envelope = session.envelope as unknown as DsnEnvelope;
        received.push({
          raw: Buffer.concat(chunks).toString('utf8'),
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: envelope.rcptTo.map((r) => r.address),
          mailDsn: envelope.dsn,
          rcptDsn: envelope.rcptTo.map((r) => r.dsn),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    server,
    port,
    url: `smtp://127.0.0.1:${port}`,
    received,
    close: () => {
      closed ??= new Promise<void>((resolve) => server.close(() => resolve()));
      return closed;
    },
  };
}

/** An SMTP error reply for an `onRcptTo`/`onMailFrom`/`onAuth` callback, e.g. `smtpError(550, '5.1.1 mailbox unavailable')`. */
export function smtpError(responseCode: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode });
}

/** A sink that is a relay requiring a login, as `startLoginRelay` makes it. */
export interface LoginRelay extends SmtpSink {
  /** Every address named at RCPT TO, accepted or refused, in order. */
  readonly rcpts: string[];
  /** `smtp://tern:<password>@127.0.0.1:<port>`: the relay's SMTP_URL with a password Tern has. */
  urlWith(password: string): string;
}

/**
 * A relay that requires AUTH (PLAIN or LOGIN, user `tern`, no TLS) and answers 535 to any other
 * password than `password()` (read at each login, so a test can rotate it); 550 5.1.1 at RCPT TO for
 * a recipient whose address starts with `reject`, 550 5.7.1 at MAIL FROM for a sender starting with
 * `blocked` (issue 24 item 13: what is the relay's fault, what is the recipient's).
 */
export async function startLoginRelay(password: () => string): Promise<LoginRelay> {
  const rcpts: string[] = [];
  const sink = await startSmtpSink({
    authOptional: false,
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      if (auth.username === 'tern' && auth.password === password()) return callback(null, { user: 'tern' });
      return callback(smtpError(535, '5.7.8 Authentication credentials invalid'));
    },
    onMailFrom(address, _session, callback) {
      if (address.address.startsWith('blocked')) return callback(smtpError(550, '5.7.1 sender not allowed'));
      return callback();
    },
    onRcptTo(address, _session, callback) {
      rcpts.push(address.address);
      if (address.address.startsWith('reject')) return callback(smtpError(550, '5.1.1 mailbox unavailable'));
      return callback();
    },
  });
  return Object.assign(sink, {
    rcpts,
    urlWith: (pw: string) => `smtp://tern:${pw}@127.0.0.1:${sink.port}`,
  });
}

/** An SMTP server's connections so far: accepted, open now, and the most open at once. */
export interface ConnectionCount {
  accepted: number;
  open: number;
  peak: number;
}

/**
 * `onConnect`/`onClose` options that count a server's connections into `count` (spread `options`
 * into the server's options; a test resets what it measures by writing to `count`).
 */
export function countConnections(): {
  count: ConnectionCount;
  options: Required<Pick<SMTPServerOptions, 'onConnect' | 'onClose'>>;
} {
  const count: ConnectionCount = { accepted: 0, open: 0, peak: 0 };
  return {
    count,
    options: {
      onConnect(_session, callback) {
        count.accepted++;
        count.open++;
        count.peak = Math.max(count.peak, count.open);
        callback();
      },
      onClose() {
        count.open--;
      },
    },
  };
}
