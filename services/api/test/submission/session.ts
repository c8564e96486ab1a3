// What the SMTP submission tests share: a listener on a loopback port over the app under test, and
// one message sent by swaks (the Debian package) through it — STARTTLS, AUTH as `apikey`.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { type SubmissionServer, startSubmissionServer, type TlsPair } from '../../src/index.js';

const exec = promisify(execFile);

/** The submission listener on 127.0.0.1, an ephemeral port, over `app`; STARTTLS required. */
export function startTlsSubmission(app: FastifyInstance, tls: TlsPair): Promise<SubmissionServer> {
  return startSubmissionServer({ app, port: 0, host: '127.0.0.1', tls, requireTls: true });
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
