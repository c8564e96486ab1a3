import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dkimVerify } from 'mailauth';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { tempDir, waitFor } from '../support/services.js';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.js';
import { buildTern, ownerJwt, startTern, type TernProcess } from './tern-process.js';

const JWT_SECRET = 'domains-e2e-jwt-secret-0123456789abcdef';
const WEBHOOK_SECRETS_KEY = 'domains-e2e-webhook-secrets-key-0123456789';
const TENANT = 'domains-e2e';

interface Domain {
  id: string;
  name: string;
  status: string;
  records: { purpose: string; type: string; name: string; value: string }[];
}

/**
 * SPEC §20 on the built process, as a new user meets it in production: NODE_ENV=production with
 * a real relay (SMTP_URL: `smtp-server` in this process), DNS_SERVERS on a DNS server in this
 * process, a webhook endpoint subscribed to domain events. Mail from an unverified domain is
 * refused; the user adds the domain, publishes the records, verifies; the webhook hears
 * `domain.verified`; mail from the domain reaches the relay signed, and mailauth verifies it.
 */
describe('sending domains on the built process (production, a real relay)', () => {
  let dns: TestDnsServer;
  let tern: TernProcess;
  let smtp: SmtpSink;
  let hooks: Server;
  const deliveries: { id: string; body: string; headers: Record<string, string> }[] = [];
  const jwt = ownerJwt(JWT_SECRET, TENANT);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${tern.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${jwt}` },
      ...(body === undefined
        ? {}
        : {
            body: JSON.stringify(body),
            headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
          }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    buildTern();
    dns = await startTestDnsServer();
    smtp = await startSmtpSink();
    hooks = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        deliveries.push({
          id: String(req.headers['webhook-id']),
          body,
          headers: req.headers as Record<string, string>,
        });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', () => r()));
    tern = await startTern({
      env: {
        NODE_ENV: 'production',
        DATA_DIR: tempDir('tern-e2e-domains-'),
        JWT_SECRET,
        INGEST_TOKEN: 'domains-e2e-ingest-token-0123456789abcdef',
        TRACKING_SECRET: 'domains-e2e-tracking-secret-0123456789',
        WEBHOOK_SECRETS_KEY,
        ENCRYPTION_KEY: 'domains-e2e-encryption-key-0123456789abcdef',
        SMTP_URL: smtp.url,
        DNS_SERVERS: dns.server,
        BOUNCE_MX_HOST: 'bounces.tern.test',
        // The webhook receiver of this test is on loopback.
        WEBHOOK_ALLOW_PRIVATE: 'true',
      },
    });
  }, 180_000);

  afterAll(async () => {
    await tern?.stop();
    await smtp?.close();
    await new Promise<void>((r) => (hooks ? hooks.close(() => r()) : r()));
    await dns?.close();
  });

  it('refuses an unverified From, then signs the mail of the domain the user verified', async () => {
    const name = `shop-${process.pid}.example.test`;
    const mail = { to: 'ada@example.com', subject: 'Order shipped', text: 'Your order is on its way.' };

    const refused = await call('POST', '/emails/send', { ...mail, from: `Shop <orders@${name}>` });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED' });
    expect(refused.body.message).toContain(`the domain ${name} is not verified`);

    const hook = await call('POST', '/webhooks', {
      url: `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/tern`,
      events: ['domain.verified', 'domain.failed'],
    });
    expect(hook.status).toBe(201);

    const added = await call('POST', '/domains', { name });
    expect(added.status).toBe(201);
    const domain = added.body as unknown as Domain;
    for (const r of domain.records) {
      if (r.purpose === 'dmarc') continue;
      if (r.type === 'MX') dns.mx(r.name, r.value);
      else dns.txt(r.name, r.value);
    }
    const verified = await call('POST', `/domains/${domain.id}/verify`);
    expect(verified.body).toMatchObject({ status: 'verified', reason: null });

    // The webhook hears it, signed with the endpoint's secret.
    const delivery = await waitFor(() => deliveries.find((d) => d.id === `${domain.id}:verified:1`), {
      timeoutMs: 20_000,
      description: 'domain.verified delivered',
    });
    const payload = new Webhook(String(hook.body.secret)).verify(delivery.body, delivery.headers) as {
      type: string;
      data: Record<string, unknown>;
    };
    expect(payload).toMatchObject({
      type: 'domain.verified',
      data: { domainId: domain.id, tenantId: TENANT, name, status: 'verified' },
    });

    const sent = await call('POST', '/emails/send', { ...mail, from: `Shop <orders@${name}>` });
    expect(sent.status).toBe(202);
    const got = await waitFor(() => smtp.received.find((m) => m.raw.includes(`<${String(sent.body.id)}@`)), {
      timeoutMs: 20_000,
      description: 'the signed message at the relay',
    });
    // The envelope sender is the VERP address of the email's first recipient on the bounce subdomain
    // (SPEC §20, §21).
    expect(got.mailFrom).toMatch(
      new RegExp(`^b\\+${String(sent.body.id)}=0\\.[0-9a-f]+@tern-bounces\\.${name.replaceAll('.', '\\.')}$`),
    );
    const result = await dkimVerify(Buffer.from(got.raw), { resolver: dns.resolve as never });
    expect(result.results.map((r) => [r.signingDomain, r.status.result])).toEqual([[name, 'pass']]);
  });
});
