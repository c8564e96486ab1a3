import { dkimVerify } from 'mailauth';
import { simpleParser } from 'mailparser';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendMailTo } from '../support/bounce-mail.js';
import { startTestDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { tempDir, waitFor } from '../support/services.js';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.js';
import { buildTern, freePort, ownerJwt, startTern, type TernProcess } from './tern-process.js';

const JWT_SECRET = 'inbound-fwd-e2e-secret-0123456789abcdef';
const TENANT = 'fwd-e2e';
const INBOUND_DOMAIN = 'in.tern.test';

/**
 * The `forward` route action in production (SPEC §24, §20; docs/inbound.md "Forwarding") on the
 * built process: NODE_ENV=production, a real relay (SMTP_URL: the smtp-server sink), DNS_SERVERS on
 * the in-process DNS server. A forward of mail received at an address of a verified domain is sent
 * From that address with that domain's DKIM; a forward of mail received under INBOUND_DOMAIN (not
 * the tenant's DNS) is sent From `forwarding@` the tenant's verified domain with its DKIM; mailauth
 * verifies both signatures at the relay as `pass`.
 */
describe('forwarding in production (verified domain, forwarding@ fallback)', () => {
  let dns: TestDnsServer;
  let tern: TernProcess;
  let sink: SmtpSink;
  let inboundPort: number;
  const name = `fwd-${process.pid}.example.test`;
  const jwt = ownerJwt(JWT_SECRET, TENANT);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${tern.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${jwt}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  async function deliver(message: Mail.Options): Promise<string> {
    const { response } = await sendMailTo(inboundPort, message);
    const id = /inb_[0-9a-z]+/.exec(response)?.[0];
    if (!id) throw new Error(`not stored: ${response}`);
    return id;
  }
  /** The forward of one inbound message at the relay, parsed, with its DKIM results. */
  async function forwardOf(inboundId: string, to: string) {
    const got = await waitFor(
      () =>
        sink.received.find(
          (m) => m.rcptTo.includes(to) && m.raw.includes(`Tern-Forwarded-Inbound: ${inboundId}`),
        ),
      { timeoutMs: 60_000, intervalMs: 200, description: `the forward of ${inboundId} at the relay` },
    );
    expect(got.rcptTo).toEqual([to]);
    const dkim = await dkimVerify(Buffer.from(got.raw), { resolver: dns.resolve as never });
    return {
      mail: await simpleParser(got.raw),
      dkim: dkim.results.map((r) => [r.signingDomain, r.status.result]),
    };
  }

  beforeAll(async () => {
    buildTern();
    dns = await startTestDnsServer();
    sink = await startSmtpSink();
    inboundPort = await freePort();
    tern = await startTern({
      env: {
        NODE_ENV: 'production',
        DATA_DIR: tempDir('tern-e2e-inbound-fwd-'),
        JWT_SECRET,
        INGEST_TOKEN: 'inbound-fwd-e2e-ingest-token-0123456789',
        TRACKING_SECRET: 'inbound-fwd-e2e-tracking-secret-0123456789',
        WEBHOOK_SECRETS_KEY: 'inbound-fwd-e2e-webhook-secrets-key-0123456789',
        ENCRYPTION_KEY: 'inbound-fwd-e2e-encryption-key-0123456789abcdef',
        SMTP_URL: sink.url,
        DNS_SERVERS: dns.server,
        BOUNCE_MX_HOST: 'bounces.tern.test',
        INBOUND_SMTP_PORT: String(inboundPort),
        INBOUND_DOMAIN,
        INBOUND_MX_HOST: 'mx.tern.test',
      },
      readyTimeoutMs: 180_000,
    });
    // The tenant's domain, verified and receiving (its inbound_mx record published and verified too).
    const added = await call('POST', '/domains', { name });
    expect(added.status).toBe(201);
    const id = String(added.body.id);
    const receiving = await call('PATCH', `/domains/${id}`, { receiving: true });
    expect(receiving.status).toBe(200);
    const records = receiving.body.records as {
      purpose: string;
      type: string;
      name: string;
      value: string;
    }[];
    expect(records.find((r) => r.purpose === 'inbound_mx')).toMatchObject({
      type: 'MX',
      value: '10 mx.tern.test',
    });
    for (const r of records) {
      if (r.purpose === 'dmarc') continue;
      if (r.type === 'MX') {
        // `10 mx.tern.test` (inbound_mx) or a bare host (the bounce subdomain's).
        const [priority, host] = r.value.includes(' ') ? r.value.split(' ') : ['10', r.value];
        dns.mx(r.name, host!, Number(priority));
      } else dns.txt(r.name, r.value);
    }
    const verified = await call('POST', `/domains/${id}/verify`);
    expect(verified.body).toMatchObject({ status: 'verified' });
    expect(
      (verified.body.records as { purpose: string; status: string }[]).find(
        (r) => r.purpose === 'inbound_mx',
      ),
    ).toMatchObject({ status: 'verified' });
  }, 240_000);

  afterAll(async () => {
    await tern?.stop();
    await sink?.close();
    await dns?.close();
  });

  it('mail received at the verified domain is forwarded From that address, signed by the domain (mailauth: pass)', async () => {
    const route = await call('POST', '/inbound/routes', {
      match: { recipient: `*@${name}` },
      priority: 1,
      actions: [{ forward: 'ops@elsewhere.test' }],
    });
    expect(route.status).toBe(201);
    const inboundId = await deliver({
      from: 'Ann Example <ann@sender.test>',
      to: `help@${name}`,
      subject: 'Forward me (own domain)',
      text: 'Hello from Ann.',
      messageId: `<own-${process.pid}@sender.test>`,
    });
    const { mail, dkim } = await forwardOf(inboundId, 'ops@elsewhere.test');
    expect(mail.from?.value[0]).toMatchObject({
      address: `help@${name}`,
      name: `Ann Example via help@${name}`,
    });
    expect(mail.replyTo?.value[0]?.address).toBe('ann@sender.test');
    expect(mail.text).toContain('Hello from Ann.');
    expect(dkim).toEqual([[name, 'pass']]);
  });

  it('mail received under INBOUND_DOMAIN is forwarded From forwarding@ the verified domain, signed by it (mailauth: pass)', async () => {
    const slugDomain = ((await call('GET', '/inbound/domain')).body as { domain: string }).domain;
    expect(slugDomain).toBe(`${TENANT}.${INBOUND_DOMAIN}`);
    const route = await call('POST', '/inbound/routes', {
      match: { recipient: `*@${slugDomain}` },
      priority: 2,
      actions: [{ forward: 'ops2@elsewhere.test' }],
    });
    expect(route.status).toBe(201);
    const inboundId = await deliver({
      from: 'Bob <bob@sender.test>',
      to: `desk@${slugDomain}`,
      subject: 'Forward me (inbound domain)',
      text: 'Hello from Bob.',
      attachments: [{ filename: 'note.txt', content: 'attached line\n', contentType: 'text/plain' }],
    });
    const { mail, dkim } = await forwardOf(inboundId, 'ops2@elsewhere.test');
    expect(mail.from?.value[0]).toMatchObject({
      address: `forwarding@${name}`,
      name: `Bob via desk@${slugDomain}`,
    });
    expect(mail.replyTo?.value[0]?.address).toBe('bob@sender.test');
    expect(mail.attachments.map((a) => a.content.toString())).toEqual(['attached line\n']);
    expect(dkim).toEqual([[name, 'pass']]);
    // A signed header altered in transit → the same signature fails: the checks above can fail.
    const raw = sink.received.find((m) => m.raw.includes(`Tern-Forwarded-Inbound: ${inboundId}`))!.raw;
    expect(raw).toContain('Subject: Forward me (inbound domain)');
    const altered = await dkimVerify(
      Buffer.from(raw.replace('Subject: Forward me (inbound domain)', 'Subject: Forward me (altered)')),
      { resolver: dns.resolve as never },
    );
    expect(altered.results.map((r) => r.status.result)).toEqual(['fail']);
  });
});
