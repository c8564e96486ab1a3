import { onFirstUse } from '@tern/kernel';
import {
  createSmtpGuard,
  DEFAULT_SMTP_LISTENER_LIMITS,
  type SmtpListenerLimits,
  serveGuarded,
} from '@tern/smtp-limits';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { type ContentBudget, type ContentHold, contentHeldHeaders } from '../emails/content-budget.js';
import { assertHeaderSection, idempotencyKeyOfMessage, SmtpRefusal, sendBodyOf } from './message.js';

/** mailparser, loaded with the first submitted message, not with the process (issue 45, item 6). */
const loadMailparser = onFirstUse(() => import('mailparser'));

/** SPEC §22: the whole message, as submitted, at most 40 MB (SIZE; 552 past it). */
export const SUBMISSION_MAX_BYTES = 40 * 1024 * 1024;
/** The step by which a message's hold in the content budget grows while its DATA arrives. */
const HOLD_STEP_BYTES = 1024 * 1024;
/** to + cc + bcc ≤ 50 (SPEC §22): RCPT past it → 452. */
export const SUBMISSION_MAX_RECIPIENTS = 50;

export interface SubmissionOptions {
  /**
   * The API every message goes through: `POST /emails/send` of this app, injected in-process, so a
   * submission is authenticated, rate-limited, validated and queued exactly like the HTTP route.
   */
  app: FastifyInstance;
  port: number;
  host: string;
  /** PEM key and certificate of STARTTLS. */
  tls: { key: string | Buffer; cert: string | Buffer };
  /** Production: AUTH (hence mail) only after STARTTLS. */
  requireTls: boolean;
  /** Name in the greeting; default the machine's. */
  hostname?: string;
  maxBytes?: number;
  /** The connection limits and deadlines every SMTP listener shares (SMTP_LISTEN_*); default the defaults. */
  limits?: SmtpListenerLimits;
  /**
   * Bytes of message content in flight (issue 40 item 8), shared with the HTTP send routes: a
   * message holds its bytes as they arrive in DATA, under the tenant of the connection's key
   * (`tenantOf`), until it is answered; one that would pass a bound is read to its end without
   * being kept and answered `451 4.3.1`, so the client retries later.
   */
  contentBudget?: { budget: ContentBudget; tenantOf(key: string): Promise<string | null> };
  logger?: FastifyBaseLogger;
}

export interface SubmissionServer {
  port: number;
  /** Connections open now and distinct clients among them (the guard's count). */
  stats(): { connections: number; clients: number };
  close(): Promise<void>;
}

const refusal = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

/** The SMTP answer to a refused `POST /emails/send` (its code and message). */
function smtpAnswer(status: number, body: string, headers: Record<string, unknown>): Error {
  let message = body;
  try {
    const parsed = JSON.parse(body) as { message?: string };
    if (typeof parsed.message === 'string') message = parsed.message;
  } catch {
    // Not JSON: the raw body is the reason.
  }
  const oneLine = message.replace(/[\r\n]+/g, ' ').slice(0, 400);
  if (status === 413 || (status === 400 && /at most 256 KiB/.test(message)))
    return refusal(552, `5.3.4 Message too big for Tern: ${oneLine}`);
  if (status === 503) return refusal(451, `4.3.0 ${oneLine}`);
  if (status === 429)
    return refusal(
      451,
      `4.7.0 ${oneLine}${headers['retry-after'] ? ` (in ${headers['retry-after']} s)` : ''}`,
    );
  if (status === 401 || status === 403) return refusal(550, `5.7.1 ${oneLine}`);
  if (status === 409 && /still being processed/.test(message)) return refusal(451, `4.5.0 ${oneLine}`);
  if (status >= 400 && status < 500) return refusal(550, `5.6.0 ${oneLine}`);
  return refusal(451, '4.3.0 Temporary failure: try again later');
}

/**
 * SMTP submission (SPEC §22): STARTTLS, AUTH PLAIN/LOGIN with an API key holding `email:send` as
 * password, each message parsed (`mailparser`) and queued through `POST /emails/send`; `250 … <id> position=<position>`
 * once `email.queued` is in the log.
 */
export async function startSubmissionServer(opts: SubmissionOptions): Promise<SubmissionServer> {
  const maxBytes = opts.maxBytes ?? SUBMISSION_MAX_BYTES;
  const log = opts.logger;
  // The key of each authenticated connection (and its tenant, for the content budget), by
  // connection id; never logged, dropped on close.
  const keys = new Map<string, string>();
  const tenants = new Map<string, string>();
  // The content-budget hold of each message in DATA, by connection id (released on its answer or close).
  const holds = new Map<string, ContentHold>();
  const budget = opts.contentBudget;
  const limits = opts.limits ?? DEFAULT_SMTP_LISTENER_LIMITS;
  const guard = createSmtpGuard({
    limits: {
      ...limits,
      maxRecipientsPerMessage: Math.min(limits.maxRecipientsPerMessage, SUBMISSION_MAX_RECIPIENTS),
    },
    requiresAuth: true,
    name: opts.hostname ?? 'tern',
  });

  const server = new SMTPServer({
    ...guard.serverOptions,
    ...(opts.hostname ? { name: opts.hostname } : {}),
    banner: 'Tern SMTP submission',
    key: opts.tls.key,
    cert: opts.tls.cert,
    secure: false,
    authMethods: ['PLAIN', 'LOGIN'],
    authOptional: false,
    allowInsecureAuth: !opts.requireTls,
    size: maxBytes,
    logger: false,
    disableReverseLookup: true,
    onAuth(auth, session, callback) {
      const key = auth.password ?? '';
      // The same hooks as POST /emails/send check the key (failed-credential limiter, rate limit,
      // scope); an empty body is then refused by validation, so a 400 means the key may send.
      opts.app
        .inject({
          method: 'POST',
          url: '/emails/send',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          payload: '{}',
          remoteAddress: session.remoteAddress,
        })
        .then(
          (res) => {
            if (res.statusCode === 400) {
              const accept = () => {
                keys.set(session.id, key);
                guard.authSucceeded(session);
                callback(null, { user: { username: auth.username ?? '' } });
              };
              if (!budget) return accept();
              budget.tenantOf(key).then(
                (tenantId) => {
                  if (tenantId === null)
                    return callback(refusal(454, '4.7.0 Temporary authentication failure'));
                  tenants.set(session.id, tenantId);
                  accept();
                },
                () => callback(refusal(454, '4.7.0 Temporary authentication failure')),
              );
              return;
            }
            if (res.statusCode >= 500) {
              callback(refusal(454, '4.7.0 Temporary authentication failure'));
              return;
            }
            // A refused key, or the failed-credential limiter: one more failure of this connection
            // (the last one allowed closes it).
            const answer =
              res.statusCode === 429
                ? refusal(
                    454,
                    `4.7.0 Too many attempts: retry in ${String(res.headers['retry-after'] ?? 60)} s`,
                  )
                : refusal(
                    535,
                    '5.7.8 Authentication failed: the password must be an API key with the email:send scope',
                  );
            callback(guard.authFailed(session, answer));
          },
          () => callback(refusal(454, '4.7.0 Temporary authentication failure')),
        );
    },
    onMailFrom(_address, session, callback) {
      callback(guard.message(session) ?? undefined);
    },
    onRcptTo(_address, session, callback) {
      // Per message (to + cc + bcc ≤ 50, SPEC §22: 452), per connection, per client and minute.
      callback(guard.recipient(session) ?? undefined);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      let bytes = 0;
      const tenantId = tenants.get(session.id);
      const hold = budget && tenantId !== undefined ? budget.budget.open(tenantId) : null;
      if (hold) holds.set(session.id, hold);
      let reserved = 0;
      let overBudget = false;
      const release = () => hold?.release();
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > maxBytes || overBudget) return;
        if (hold && bytes > reserved) {
          const step = Math.max(HOLD_STEP_BYTES, bytes - reserved);
          if (!hold.grow(step)) {
            // Past a bound: the rest is read and dropped, the message answered 451 at its end.
            overBudget = true;
            chunks.length = 0;
            release();
            return;
          }
          reserved += step;
        }
        chunks.push(chunk);
      });
      // A client that goes away mid-DATA: the stream is destroyed, never ends, nothing is queued
      // (its hold is given back on close).
      stream.on('error', () => undefined);
      stream.on('end', () => {
        // From here the answer gives the hold back (a close during the submit does not).
        if (holds.get(session.id) === hold) holds.delete(session.id);
        if ((stream as unknown as { sizeExceeded?: boolean }).sizeExceeded) {
          release();
          callback(refusal(552, `5.3.4 Message too big: at most ${maxBytes} bytes`));
          return;
        }
        if (overBudget) {
          callback(refusal(451, '4.3.1 Too much message content in flight: try again later'));
          return;
        }
        submit(Buffer.concat(chunks.splice(0)), session, hold !== null)
          .finally(release)
          .then(
            // Read-your-writes (SPEC §25): the send's position, for `Tern-Consistent-With`.
            ({ id, position }) => callback(null, `2.0.0 OK: queued as ${id} position=${position}`),
            (error: unknown) => {
              if (error instanceof SmtpRefusal) callback(refusal(error.responseCode, error.message));
              else if (error instanceof Error && 'responseCode' in error) callback(error);
              else {
                log?.error({ err: error }, 'smtp submission failed');
                callback(refusal(451, '4.3.0 Temporary failure: try again later'));
              }
            },
          );
      });
    },
    onClose(session) {
      keys.delete(session.id);
      tenants.delete(session.id);
      holds.get(session.id)?.release();
      holds.delete(session.id);
    },
  });

  async function submit(
    raw: Buffer,
    session: SMTPServerSession,
    held: boolean,
  ): Promise<{ id: string; position: string }> {
    const key = keys.get(session.id);
    if (key === undefined) throw new SmtpRefusal(530, '5.7.0 Authentication required');
    assertHeaderSection(raw);
    let mail: ParsedMail;
    try {
      mail = await (await loadMailparser()).simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true });
    } catch (error) {
      throw new SmtpRefusal(
        550,
        `5.6.0 Malformed message: ${error instanceof Error ? error.message.slice(0, 200) : 'unreadable'}`,
      );
    }
    const body = sendBodyOf(
      mail,
      session.envelope.rcptTo.map((r) => r.address),
    );
    const idempotencyKey = idempotencyKeyOfMessage(mail);
    const res = await opts.app.inject({
      method: 'POST',
      url: '/emails/send',
      headers: {
        'x-api-key': key,
        'content-type': 'application/json',
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        // Its bytes are held by this message's hold already: not counted a second time.
        ...(held ? contentHeldHeaders() : {}),
      },
      payload: JSON.stringify(body),
      remoteAddress: session.remoteAddress,
    });
    if (res.statusCode !== 202) throw smtpAnswer(res.statusCode, res.body, res.headers);
    const { id, position } = res.json() as { id: string; position: string };
    log?.info({ emailId: id, remoteAddress: session.remoteAddress }, 'smtp submission queued');
    return { id, position };
  }

  const listener = serveGuarded(server, guard, {
    port: opts.port,
    host: opts.host,
    onError: (error) => log?.warn({ err: error }, 'smtp submission connection error'),
  });
  return { port: await listener.listen(), stats: listener.stats, close: listener.close };
}
