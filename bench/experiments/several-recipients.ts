/**
 * CPU of a DKIM-signed email to several recipients through Tern's SMTP provider (one envelope per
 * recipient, each its VERP sender: `services/sender/src/providers/smtp-each.ts`), into a real SMTP
 * server in this process (the tests' smtp-server sink, so its CPU is counted too). RSA-2048 key,
 * 5 pooled connections, emails one after the other; prints process CPU and wall time per email and
 * the signatures made (crypto.sign calls). Backs "Several recipients: signed once" in
 * bench/README.md.
 *   npx tsx bench/experiments/several-recipients.ts        (R=10 recipients: to + 9 cc;
 *   BENCH_SMTP_OUT_SENDER: another sender, `bench/lib/sender-under-test.ts`)
 */
import crypto, { generateKeyPairSync } from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { startSmtpSink } from '../../test/support/smtp-sink.js';
import { senderUnderTest } from '../lib/sender-under-test.js';

const { createSmtpProvider } = senderUnderTest;
const R = Number(process.env.R ?? 10);
const EMAILS = Number(process.env.EMAILS ?? 150);
let signatures = 0;
// The sender's RSA step is `crypto.sign` (in the thread pool, `dkim-sign.ts`'s named import: synced).
const sign = crypto.sign;
crypto.sign = ((...args: Parameters<typeof sign>) => {
  signatures++;
  return (sign as (...a: unknown[]) => unknown)(...args);
}) as typeof sign;
syncBuiltinESMExports();

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const sink = await startSmtpSink({ hideDSN: false });
const provider = createSmtpProvider({
  url: sink.url,
  timeoutMs: 5000,
  pool: { maxConnections: 5, maxMessages: 1000 },
});
const body = 'Hello there. '.repeat(200);
const send = (i: number) =>
  provider.send(
    {
      messageId: `<m${i}@signer.test>`,
      from: 'Acme <hello@signer.test>',
      to: 'r0@example.com',
      cc: Array.from({ length: R - 1 }, (_, k) => `c${k}@example.com`),
      bcc: [],
      replyTo: null,
      subject: 'Hi',
      html: `<p>${body}</p>`,
      text: body,
      headers: {},
    } as never,
    {
      tenantId: 't',
      emailId: `em_${i}`,
      signing: { dkim: { domain: 'signer.test', selector: 's1', privateKey } },
      envelopeFrom: `b+${i}@bounces.signer.test`,
      envelopeFromFor: (r) => `b+${i}+${r.split('@')[0]}@bounces.signer.test`,
    },
  );
try {
  for (let i = 0; i < 30; i++) await send(i);
  for (const round of [1, 2, 3]) {
    signatures = 0;
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < EMAILS; i++) {
      const result = await send(1000 * round + i);
      if (result.kind !== 'sent') throw new Error(`not sent: ${JSON.stringify(result)}`);
    }
    const used = process.cpuUsage(cpu);
    console.log(
      `${R} recipients, round ${round}: CPU ${((used.user + used.system) / EMAILS / 1000).toFixed(2)} ms/email, ` +
        `wall ${((performance.now() - started) / EMAILS).toFixed(2)} ms/email, ${signatures / EMAILS} signature(s)/email`,
    );
  }
} finally {
  await provider.close?.();
  await sink.close();
}
