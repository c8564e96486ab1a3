import type { Domain } from '@tern/contracts';
import { createSandboxProvider, createSmtpProvider, type Sender } from '@tern/sender';
import { type SendingDomains, verpAddress } from '@tern/sending-domains';
import { dkimVerify } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../../test/support/dns-server.js';
import { waitFor } from '../../../../test/support/services.js';
import { type SmtpSink, type SunkMessage, startSmtpSink } from '../../../../test/support/smtp-sink.js';
import type { DomainPolicy } from '../../src/index.js';
import {
  clearPrivateKey,
  keyFingerprints,
  keyPiecesIn,
  publish,
  testDomains,
  testSigningKeys,
} from '../domains-support.js';
import {
  openSendingWorld,
  type SendingWorld,
  TRACKING_SECRET,
  waitForStatus,
  wallClock,
} from '../sending-support.js';
import { bearer, closeAll, jwtFor, suffix } from '../support.js';

// SPEC §20, sending: the whole path (API → log → sender → nodemailer → a real SMTP server in this
// process), every signature checked by an independent verifier (mailauth) resolving through a DNS
// server in this process.

const TENANT = `domsend-${suffix()}`;
const policy: DomainPolicy = { requireVerified: false };
let dns: TestDnsServer;
let smtp: SmtpSink;
let world: SendingWorld;
let domains: SendingDomains;
let sender: Sender;
let verified: Domain;
let unverified: Domain;

const owner = () => bearer(jwtFor(wallClock, TENANT));
let n = 0;
const fresh = () => `s${++n}-${process.pid}.example.test`;

async function addDomain(name: string): Promise<Domain> {
  const res = await world.app.inject({
    method: 'POST',
    url: '/domains',
    headers: owner(),
    payload: { name },
  });
  if (res.statusCode !== 201) throw new Error(`add: ${res.statusCode} ${res.body}`);
  return res.json() as Domain;
}

async function send(body: Record<string, unknown>) {
  return world.app.inject({ method: 'POST', url: '/emails/send', headers: owner(), payload: body });
}

/** Sends through the API and waits for the message at the SMTP server (by the Tern email id header). */
async function sendAndReceive(body: Record<string, unknown>): Promise<{ id: string; got: SunkMessage }> {
  const res = await send(body);
  expect(res.statusCode, res.body).toBe(202);
  const id = (res.json() as { id: string }).id;
  const got = await waitFor(() => smtp.received.find((r) => r.raw.includes(`<${id}@`)), {
    timeoutMs: 20_000,
    description: `message ${id} at the SMTP server`,
  });
  return { id, got };
}

const verify = (raw: string) => dkimVerify(Buffer.from(raw), { resolver: dns.resolve as never });

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpSink();
  world = await openSendingWorld({
    sender: false,
    app: (stores, log) => {
      domains = testDomains(stores.pool, log, dns);
      return { features: { domains: { domains } }, policy: { domainPolicy: policy } };
    },
  });
  sender = await world.startSender({
    provider: createSmtpProvider({ url: smtp.url, timeoutMs: 5_000 }),
    signingKeys: testSigningKeys(world.stores.pool),
  });
  verified = await addDomain(fresh());
  publish(dns, verified, true);
  const checked = await world.app.inject({
    method: 'POST',
    url: `/domains/${verified.id}/verify`,
    headers: owner(),
  });
  expect(checked.json()).toMatchObject({ status: 'verified' });
  unverified = await addDomain(fresh());
}, 120_000);

afterAll(() => closeAll(world, smtp, dns));

describe('DKIM: mail of a verified domain is signed, and verifies', () => {
  it('a message from the domain (or a subdomain of it) passes mailauth; the envelope sender is on the bounce subdomain', async () => {
    const { id, got } = await sendAndReceive({
      from: `Acme News <hello@news.${verified.name}>`,
      to: 'ada@example.com',
      cc: ['grace@example.com'],
      subject: 'Héllo — signed',
      html: '<p>Signed <a href="https://example.com/x">link</a></p>',
      text: 'Signed',
      headers: {
        'List-Unsubscribe': '<https://tern.test/u/abc>',
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
    });
    // SPEC §21: one envelope per recipient, each with a VERP address naming the email and the
    // recipient's index, with the HMAC of the tenant's email (so no recipient can forge another's
    // bounce). The same bytes go to both.
    const envelopes = await waitFor(
      () => {
        const all = smtp.received.filter((r) => r.raw.includes(`<${id}@`));
        return all.length === 2 ? all : undefined;
      },
      { timeoutMs: 20_000, description: 'both envelopes at the SMTP server' },
    );
    const byRecipient = new Map(envelopes.map((e) => [e.rcptTo.join(','), e]));
    ['ada@example.com', 'grace@example.com'].forEach((rcpt, index) => {
      const envelope = byRecipient.get(rcpt);
      expect(envelope, rcpt).toBeDefined();
      expect(envelope!.mailFrom).toBe(
        verpAddress(TRACKING_SECRET, TENANT, id, `tern-bounces.${verified.name}`, index),
      );
      expect(envelope!.mailFrom).toMatch(new RegExp(`^b\\+${id}=${index}\\.[0-9a-f]{16}@tern-bounces\\.`));
      expect(envelope!.raw).toBe(got.raw);
    });
    const result = await verify(got.raw);
    expect(result.results).toHaveLength(1);
    const [signature] = result.results;
    expect(signature!.status.result).toBe('pass');
    expect(signature!.signingDomain).toBe(verified.name);
    expect(signature!.selector).toBe(verified.records[0]!.name.split('.')[0]);
    // mailauth's result carries the tags it verified (`algo`, `format`: not in its type declarations).
    expect(signature).toMatchObject({ algo: 'rsa-sha256', format: 'relaxed/relaxed', modulusLength: 2048 });
    expect(signature!.info).toMatch(/^dkim=pass /);
    // The headers of SPEC §20 that the message has are all signed.
    const h = /\bh=([^;]+);/
      .exec(got.raw.replace(/\r?\n\s+/g, ' '))![1]!
      .replace(/\s/g, '')
      .toLowerCase();
    expect(h.split(':').sort()).toEqual(
      [
        'from',
        'to',
        'cc',
        'subject',
        'date',
        'message-id',
        'mime-version',
        'content-type',
        'list-unsubscribe',
        'list-unsubscribe-post',
      ].sort(),
    );
    // The key that signed it is nowhere in the message.
    const key = await clearPrivateKey(world.stores.pool, TENANT, verified.id);
    expect(keyPiecesIn(got.raw, keyFingerprints(key))).toEqual([]);
  });

  it('a body or a signed header altered after signing fails; an unsigned header does not matter', async () => {
    const { id, got } = await sendAndReceive({
      from: `hello@${verified.name}`,
      to: 'ada@example.com',
      subject: 'Original subject',
      text: 'The original body of the message.',
    });
    expect((await verify(got.raw)).results[0]!.status.result).toBe('pass');

    const body = got.raw.replace('The original body', 'A forged body');
    expect(body).not.toBe(got.raw);
    // A body hash mismatch fails verification; mailauth words it `dkim=neutral (body hash did not verify)`.
    const forgedBody = (await verify(body)).results[0]!;
    expect(forgedBody.status).toMatchObject({ result: 'neutral', comment: 'body hash did not verify' });

    const subject = got.raw.replace('Subject: Original subject', 'Subject: Forged subject');
    expect(subject).not.toBe(got.raw);
    expect((await verify(subject)).results[0]!.status).toMatchObject({
      result: 'fail',
      comment: 'bad signature',
    });

    const unsigned = got.raw.replace(`X-Tern-Email-Id: ${id}`, 'X-Tern-Email-Id: em_other');
    expect((await verify(unsigned)).results[0]!.status.result).toBe('pass');
  });

  it('the DNS record changed after signing: the signature no longer verifies', async () => {
    const { got } = await sendAndReceive({
      from: `hello@${verified.name}`,
      to: 'ada@example.com',
      subject: 'S',
      text: 'T',
    });
    const dkim = verified.records[0]!;
    dns.remove(dkim.name);
    dns.txt(dkim.name, unverified.records[0]!.value); // another key's record
    try {
      expect((await verify(got.raw)).results[0]!.status.result).toBe('fail');
    } finally {
      dns.remove(dkim.name);
      dns.txt(dkim.name, dkim.value);
    }
  });

  it('mail of an unverified domain goes out unsigned in development, its envelope sender its From', async () => {
    const { got } = await sendAndReceive({
      from: `hello@${unverified.name}`,
      to: 'ada@example.com',
      subject: 'S',
      text: 'T',
    });
    expect(got.raw).not.toMatch(/^DKIM-Signature:/im);
    expect(got.mailFrom).toBe(`hello@${unverified.name}`);
    expect((await verify(got.raw)).results[0]!.status.result).toBe('none');
  });
});

describe('production with a real provider: only verified domains send (400 DOMAIN_NOT_VERIFIED)', () => {
  const counts = async () => {
    // Queued emails only: earlier tests' outcomes may still reach the log meanwhile.
    const { rows } = await world.stores.pool.query<{ rows: string; events: string }>(
      `SELECT (SELECT count(*) FROM outgoing_emails WHERE tenant_id = $1) AS rows,
              (SELECT count(*) FROM event_log WHERE value LIKE '%"email.queued"%') AS events`,
      [TENANT],
    );
    return rows[0]!;
  };

  it('a send, a batch, a campaign or a sequence from an unverified domain is refused, naming it; nothing queued', async () => {
    policy.requireVerified = true;
    try {
      const before = await counts();
      const one = await send({
        from: `Acme <hello@${unverified.name}>`,
        to: 'ada@example.com',
        subject: 'S',
        text: 'T',
      });
      expect(one.statusCode).toBe(400);
      expect(one.json()).toMatchObject({
        code: 'DOMAIN_NOT_VERIFIED',
        message: `body.from: the domain ${unverified.name} is not verified (add it with POST /domains and publish its DNS records)`,
      });
      const batch = await world.app.inject({
        method: 'POST',
        url: '/emails/batch',
        headers: owner(),
        payload: [
          { from: `hello@${verified.name}`, to: 'a@example.com', subject: 'S', text: 'T' },
          { from: `hello@${unverified.name}`, to: 'b@example.com', subject: 'S', text: 'T' },
          { from: 'x@elsewhere.example', to: 'c@example.com', subject: 'S', text: 'T' },
        ],
      });
      expect(batch.statusCode).toBe(400);
      expect(batch.json().code).toBe('DOMAIN_NOT_VERIFIED');
      expect(batch.json().message).toBe(
        `body.1.from: the domain ${unverified.name} is not verified (add it with POST /domains and publish its DNS records); ` +
          'body.2.from: the domain elsewhere.example is not verified (add it with POST /domains and publish its DNS records)',
      );
      const campaign = await world.app.inject({
        method: 'POST',
        url: '/campaigns',
        headers: owner(),
        payload: { name: 'c', from: `news@${unverified.name}`, audience: 'all', subject: 'S', text: 'T' },
      });
      expect(campaign.statusCode).toBe(400);
      expect(campaign.json()).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED' });
      expect(campaign.json().message).toContain(unverified.name);
      const sequence = await world.app.inject({
        method: 'POST',
        url: '/sequences',
        headers: owner(),
        payload: {
          name: 's',
          from: `news@${unverified.name}`,
          steps: [{ delayMinutes: 0, subject: 'S', text: 'T' }],
        },
      });
      expect(sequence.statusCode).toBe(400);
      expect(sequence.json()).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED' });
      expect(await counts()).toEqual(before);

      // A verified domain (or its subdomain) is accepted, and signed.
      const { got } = await sendAndReceive({
        from: `hi@mail.${verified.name}`,
        to: 'ada@example.com',
        subject: 'S',
        text: 'T',
      });
      expect((await verify(got.raw)).results[0]!.status.result).toBe('pass');
    } finally {
      policy.requireVerified = false;
    }
  });

  it('a campaign drafted while its domain was verified is refused at send once the domain failed', async () => {
    const domain = await addDomain(fresh());
    publish(dns, domain);
    await world.app.inject({ method: 'POST', url: `/domains/${domain.id}/verify`, headers: owner() });
    policy.requireVerified = true;
    try {
      const draft = await world.app.inject({
        method: 'POST',
        url: '/campaigns',
        headers: owner(),
        payload: { name: 'c', from: `news@${domain.name}`, audience: 'all', subject: 'S', text: 'T' },
      });
      expect(draft.statusCode, draft.body).toBe(201);
      await world.app.inject({ method: 'DELETE', url: `/domains/${domain.id}`, headers: owner() });
      const sent = await world.app.inject({
        method: 'POST',
        url: `/campaigns/${draft.json().id}/send`,
        headers: owner(),
      });
      expect(sent.statusCode).toBe(400);
      expect(sent.json()).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED' });
      expect(sent.json().message).toContain(domain.name);
    } finally {
      policy.requireVerified = false;
    }
  });

  it('the sender fails, unsent, mail whose domain stopped being verified before it was due', async () => {
    await sender.stop();
    world.senders.splice(world.senders.indexOf(sender), 1);
    const strict = await world.startSender({
      provider: createSmtpProvider({ url: smtp.url, timeoutMs: 5_000 }),
      signingKeys: testSigningKeys(world.stores.pool),
      requireVerifiedDomain: true,
    });
    try {
      const domain = await addDomain(fresh());
      publish(dns, domain);
      await world.app.inject({ method: 'POST', url: `/domains/${domain.id}/verify`, headers: owner() });
      const res = await send({
        from: `hello@${domain.name}`,
        to: 'ada@example.com',
        subject: 'S',
        text: 'T',
        scheduledAt: new Date(Date.now() + 1_500).toISOString(),
      });
      expect(res.statusCode).toBe(202);
      const id = res.json().id as string;
      await world.app.inject({ method: 'DELETE', url: `/domains/${domain.id}`, headers: owner() });
      const email = await waitForStatus(world.app, owner().authorization.slice(7), id, 'FAILED', [], 20_000);
      const failed = email.events.find((e) => e.type === 'email.failed')!;
      expect(failed.data.reason).toBe(
        `DOMAIN_NOT_VERIFIED: no verified domain of the tenant covers hello@${domain.name}`,
      );
      expect(smtp.received.some((r) => r.raw.includes(`<${id}@`))).toBe(false);
    } finally {
      await strict.stop();
      world.senders.splice(world.senders.indexOf(strict), 1);
      sender = await world.startSender({
        provider: createSmtpProvider({ url: smtp.url, timeoutMs: 5_000 }),
        signingKeys: testSigningKeys(world.stores.pool),
      });
    }
  });
});

describe('the sandbox accepts any domain and shows whether the message would have been signed', () => {
  it('GET /emails/:id/content carries dkim { domain, selector } for a verified domain, null otherwise', async () => {
    await sender.stop();
    world.senders.splice(world.senders.indexOf(sender), 1);
    const sandbox = await world.startSender({
      provider: createSandboxProvider({ pool: world.stores.pool }),
      signingKeys: testSigningKeys(world.stores.pool),
    });
    try {
      const jwt = owner().authorization.slice(7);
      const signed = (
        await send({ from: `hi@${verified.name}`, to: 'delivered@sandbox.test', subject: 'S', text: 'T' })
      ).json().id;
      const plain = (
        await send({ from: `hi@${unverified.name}`, to: 'delivered@sandbox.test', subject: 'S', text: 'T' })
      ).json().id;
      await waitForStatus(world.app, jwt, signed, 'DELIVERED');
      await waitForStatus(world.app, jwt, plain, 'DELIVERED');
      const content = async (id: string) =>
        (await world.app.inject({ url: `/emails/${id}/content`, headers: owner() })).json();
      expect((await content(signed)).dkim).toEqual({
        domain: verified.name,
        selector: verified.records[0]!.name.split('.')[0],
      });
      expect((await content(plain)).dkim).toBeNull();
      const kept = await world.stores.pool.query<{ message: string }>(
        'SELECT message::text FROM sandbox_messages WHERE email_id = $1',
        [signed],
      );
      const key = await clearPrivateKey(world.stores.pool, TENANT, verified.id);
      expect(keyPiecesIn(kept.rows[0]!.message, keyFingerprints(key))).toEqual([]);
    } finally {
      await sandbox.stop();
      world.senders.splice(world.senders.indexOf(sandbox), 1);
    }
  });
});
