// What the SMTP submission tests share: a listener on a loopback port over the app under test, and
// one message sent by swaks (the Debian package) through it — STARTTLS, AUTH as `apikey`.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import { type SubmissionServer, startSubmissionServer, type TlsPair } from '../../src/index.js';

const exec = promisify(execFile);

/**
 * The submission listener on 127.0.0.1, an ephemeral port, over `app`: STARTTLS offered with
 * `tls`, not required; `over` changes any option.
 */
export function startLoopbackSubmission(
  app: FastifyInstance,
  tls: TlsPair,
  over: Partial<Parameters<typeof startSubmissionServer>[0]> = {},
): Promise<SubmissionServer> {
  return startSubmissionServer({ app, port: 0, host: '127.0.0.1', tls, requireTls: false, ...over });
}

/** The submission listener on 127.0.0.1, an ephemeral port, over `app`; STARTTLS required. */
export function startTlsSubmission(app: FastifyInstance, tls: TlsPair): Promise<SubmissionServer> {
  return startLoopbackSubmission(app, tls, { requireTls: true });
}

/**
 * A nodemailer client of the submission listener at `port`: STARTTLS, trusting the certificate of
 * `tls`; AUTH as `apikey` with `pass` (without one: no AUTH). `over` changes any option.
 */
export function submissionClient(
  port: number,
  tls: TlsPair,
  pass?: string,
  over: SMTPTransport.Options = {},
) {
  return nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    requireTLS: true,
    tls: { ca: tls.cert, servername: 'localhost' },
    ...(pass === undefined ? {} : { auth: { user: 'apikey', pass } }),
    connectionTimeout: 10_000,
    ...over,
  });
}

export interface SwaksMessage {
  port: number;
  /** The API key sent as the password (user `apikey`). */
  password: string;
  to: string;
  from?: string;
  auth?: 'PLAIN' | 'LOGIN';
  /** Without it swaks sends its own default message. */
  subject?: string;
  body?: string;
  timeoutMs?: number;
}

/** Runs swaks for one message; its transcript on stdout (rejects on a non-zero exit, as execFile does). */
export function swaks(m: SwaksMessage): Promise<{ stdout: string; stderr: string }> {
  const args = [
    ...['--server', `127.0.0.1:${m.port}`, '--tls', '--auth', m.auth ?? 'PLAIN'],
    ...['--auth-user', 'apikey', '--auth-password', m.password],
    ...['--from', m.from ?? 'hello@acme.test', '--to', m.to],
    ...(m.subject === undefined ? [] : ['--header', `Subject: ${m.subject}`]),
    ...(m.body === undefined ? [] : ['--body', m.body]),
  ];
  return exec('swaks', args, { timeout: m.timeoutMs ?? 20_000 });
}
