/**
 * DKIM (SPEC §20), a phase of the send bench: the signing cost per message, and sends/s over SMTP
 * signed ÷ unsigned. One verified domain (through the domains service; a DNS that says yes), one
 * SMTP sender with the signing keys, a sink relay in this process; unsigned and signed runs
 * alternate twice, the best of each counts.
 */
import type { KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { EventStream } from '@tern/event-log';
import { isSuppressed, suppressedAmong } from '@tern/read-models';
import { createSender, createSmtpProvider, DKIM_SIGNED_HEADERS } from '@tern/sender';
import { getTemplate } from '@tern/templates';
import nodemailer from 'nodemailer';
import type pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { verifiedBenchDomain } from './bench-domain.js';
import { postJson } from './sending.js';
import { pollUntil } from './services.js';
import { round } from './stats.js';

/** An SMTP relay that accepts everything and counts the messages (the sink of the DKIM runs). */
export function startSink(): Promise<{ url: string; count: () => number; close(): Promise<void> }> {
  let count = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      stream.on('data', () => undefined);
      stream.on('end', () => {
        count++;
        callback();
      });
    },
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.server.address() as AddressInfo;
      resolve({
        url: `smtp://127.0.0.1:${port}`,
        count: () => count,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}

/** µs per message nodemailer spends composing a message (and signing it, with `dkim`), best of 3 rounds. */
async function composeMicros(
  n: number,
  dkim: { domainName: string; keySelector: string; privateKey: KeyObject } | null,
) {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true });
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 3; round++) {
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      await transport.sendMail({
        from: 'Bench <bench@acme.test>',
        to: 'delivered@example.com',
        subject: `Bench ${i}`,
        html: `<p>Bench ${i} <a href="https://example.com/${i}">link</a></p>`,
        messageId: `<bench-${i}@tern.test>`,
        ...(dkim
          ? {
              dkim: {
                ...dkim,
                // A parsed key, as the SMTP provider passes it (nodemailer's types say string).
                privateKey: dkim.privateKey as unknown as string,
                headerFieldNames: DKIM_SIGNED_HEADERS,
              },
            }
          : {}),
      });
    }
    best = Math.min(best, ((performance.now() - started) * 1000) / n);
  }
  return best;
}

/**
 * Composes `messages` messages unsigned and signed, then sends `emails` emails of the tenant
 * through `POST /emails/batch` to the sink, unsigned and signed in turn, twice. No other sender
 * may be running on `log` (this one takes the due-list).
 */
export async function measureDkim(opts: {
  tag: string;
  tenantId: string;
  log: EventStream;
  pool: pg.Pool;
  apiUrl: string;
  auth: Record<string, string>;
  mail: (i: number) => Record<string, unknown>;
  /** The tracking secret, also sealing the domain's key. */
  secret: string;
  messages: number;
  emails: number;
  pollMs: number;
}) {
  const { tag, tenantId, log, pool, apiUrl, auth, mail, secret, emails } = opts;
  const { domainName, key, signingKeys } = await verifiedBenchDomain({ pool, log, tenantId, tag, secret });

  const composeUnsigned = await composeMicros(opts.messages, null);
  const composeSigned = await composeMicros(opts.messages, {
    domainName: key.domain,
    keySelector: key.selector,
    privateKey: key.privateKey,
  });

  const sink = await startSink();
  const sender = createSender({
    pool,
    log,
    group: `tern-bench.send-smtp-${tag}`,
    provider: createSmtpProvider({ url: sink.url }),
    signingKeys,
    isSuppressed,
    suppressedAmong,
    getTemplate,
    tracking: { secret, publicUrl: 'http://127.0.0.1:3000' },
  });
  await sender.start();
  const runs: { signed: boolean; perSecond: number }[] = [];
  try {
    for (const signed of [false, true, false, true]) {
      const from = signed ? `bench@${domainName}` : 'bench@unverified.example.test';
      const before = sink.count();
      const started = performance.now();
      const batches = [];
      for (let i = 0; i < emails; i += 100) {
        const size = Math.min(100, emails - i);
        batches.push(
          postJson(
            `${apiUrl}/emails/batch`,
            Array.from({ length: size }, (_, k) => ({ ...mail(i + k), from })),
            auth,
          ),
        );
      }
      await Promise.all(batches);
      if (
        !(await pollUntil(async () => sink.count() >= before + emails, {
          intervalMs: opts.pollMs,
          timeoutMs: 120_000,
        }))
      )
        throw new Error(`DKIM run (${signed ? 'signed' : 'unsigned'}) not at the relay within 120 s`);
      runs.push({ signed, perSecond: emails / ((performance.now() - started) / 1000) });
    }
  } finally {
    await sender.stop();
    await sink.close();
  }
  const best = (signed: boolean) =>
    Math.max(...runs.filter((r) => r.signed === signed).map((r) => r.perSecond));
  const result = {
    signingMicros: composeSigned - composeUnsigned,
    composeUnsigned,
    unsignedPerSecond: best(false),
    signedPerSecond: best(true),
    runs: runs.map((r) => ({ signed: r.signed, perSecond: round(r.perSecond, 1) })),
  };
  console.error(
    `[send] DKIM: signing ${result.signingMicros.toFixed(0)} µs/message (compose ${composeUnsigned.toFixed(0)} µs unsigned), ` +
      `SMTP ${result.signedPerSecond.toFixed(0)} signed vs ${result.unsignedPerSecond.toFixed(0)} unsigned sends/s ` +
      `(ratio ${(result.signedPerSecond / result.unsignedPerSecond).toFixed(2)})`,
  );
  return result;
}
