import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { signDashboardToken } from '@tern/auth';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../support/services.js';
import { buildTern, startTern, type TernProcess } from './tern-process.js';

const JWT_SECRET = 'attach-e2e-jwt-secret-0123456789abcdef';
const TENANT = 'attach-e2e';

/**
 * Issue 28 item 1 on the built process (`npm start`: embedded PGlite and log, the runtime's own
 * keyring): a message with cc, bcc, a 5 MB PDF and an inline image sent over HTTP reaches a real
 * SMTP relay (`smtp-server`, here) through the sender's SMTP provider as MIME that `mailparser`
 * reads back intact: the bytes equal, the image inline under its content id, the bcc in the
 * envelope only.
 */
describe('attachments through npm start to a real relay', () => {
  let tern: TernProcess;
  let relay: SMTPServer;
  const arrived: { parsed: ParsedMail; raw: Buffer; rcptTo: string[] }[] = [];
  const auth = {
    authorization: `Bearer ${signDashboardToken({ secret: JWT_SECRET, tenantId: TENANT, role: 'owner', expiresInSeconds: 3600 })}`,
  };

  beforeAll(async () => {
    buildTern();
    relay = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks);
          simpleParser(raw, { skipImageLinks: true }).then(
            (parsed) => {
              arrived.push({ parsed, raw, rcptTo: session.envelope.rcptTo.map((r) => r.address) });
              callback();
            },
            (error: Error) => callback(error),
          );
        });
      },
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
    const { port } = relay.server.address() as AddressInfo;
    tern = await startTern({
      env: {
        NODE_ENV: 'development',
        DATA_DIR: tempDir('tern-e2e-attach-'),
        JWT_SECRET,
        INGEST_TOKEN: 'attach-e2e-ingest-token-0123456789abcdef',
        TRACKING_SECRET: 'attach-e2e-tracking-secret-0123456789',
        WEBHOOK_SECRETS_KEY: 'attach-e2e-webhook-secrets-key-0123456789',
        ENCRYPTION_KEY: 'attach-e2e-encryption-key-0123456789abcdef',
        SMTP_URL: `smtp://127.0.0.1:${port}`,
      },
      readyTimeoutMs: 150_000,
    });
  }, 240_000);

  afterAll(async () => {
    await tern?.stop();
    await new Promise<void>((r) => (relay ? relay.close(() => r()) : r()));
  });

  it('POST /emails/send → valid MIME at the relay: bytes equal, inline cid, bcc in the envelope only', async () => {
    const pdf = Buffer.concat([
      Buffer.from('%PDF-1.4\n'),
      randomBytes(5 * 1024 * 1024),
      Buffer.from('\n%%EOF\n'),
    ]);
    const png = Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), randomBytes(2048)]);
    const res = await fetch(`${tern.url}/emails/send`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        from: 'Acme <billing@acme.test>',
        to: ['ada@example.com', 'alan@example.com'],
        cc: ['grace@example.com'],
        bcc: ['audit@example.com'],
        subject: 'Invoice 42',
        html: '<p>Your invoice.</p><img src="cid:logo@acme">',
        attachments: [
          { filename: 'invoice-42.pdf', content: pdf.toString('base64'), contentType: 'application/pdf' },
          {
            filename: 'logo.png',
            content: png.toString('base64'),
            contentType: 'image/png',
            contentId: 'logo@acme',
          },
        ],
      }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    const { id } = (await res.json()) as { id: string };
    const mail = await waitFor(
      () => arrived.find((a) => a.parsed.headers.get('x-tern-email-id') === id) ?? null,
      { timeoutMs: 60_000, description: `${id} at the relay` },
    );
    const invoice = mail.parsed.attachments.find((a) => a.filename === 'invoice-42.pdf');
    expect(invoice?.contentType).toBe('application/pdf');
    expect(invoice?.content.equals(pdf)).toBe(true);
    const logo = mail.parsed.attachments.find((a) => a.filename === 'logo.png');
    expect(logo?.cid).toBe('logo@acme');
    expect(logo?.contentDisposition).toBe('inline');
    expect(logo?.content.equals(png)).toBe(true);
    expect(mail.parsed.html).toContain('cid:logo@acme');
    expect(mail.rcptTo.sort()).toEqual([
      'ada@example.com',
      'alan@example.com',
      'audit@example.com',
      'grace@example.com',
    ]);
    expect(JSON.stringify(mail.parsed.to)).toContain('alan@example.com');
    expect(mail.parsed.headers.has('bcc')).toBe(false);
    expect(mail.raw.toString('latin1')).not.toContain('audit@example.com');
    await waitFor(
      async () => {
        const detail = (await (await fetch(`${tern.url}/emails/${id}`, { headers: auth })).json()) as {
          status: string;
        };
        return detail.status === 'SENT' ? detail : null;
      },
      { timeoutMs: 30_000, description: `${id} SENT` },
    );
  }, 120_000);
});
