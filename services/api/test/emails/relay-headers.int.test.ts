// Issue 40 item 5: a tenant cannot steer the operator's relay account. Headers such as
// X-SES-CONFIGURATION-SET, X-PM-Message-Stream, X-Mailgun-*, X-SMTPAPI are refused the same on
// every path — POST /emails/send and /emails/batch over a socket (400), the Resend compatibility
// through the `resend` package, SMTP submission through nodemailer (550 5.7.1) — and trace headers
// (Received, ARC-*, Resent-*, Authentication-Results, Disposition-Notification-To) over HTTP.
import type { AddressInfo } from 'node:net';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SubmissionServer, selfSignedPair, type TlsPair } from '../../src/index.js';
import { openSendingWorld, type SendingWorld, wallClock } from '../sending-support.js';
import { startTlsSubmission, submissionClient } from '../submission/session.js';
import { closeAll, createKey, jwtFor, suffix } from '../support.js';

let world: SendingWorld;
let tls: TlsPair;
let submission: SubmissionServer;
let base: string;
let key: string;
const run = suffix();
const A = `relayhdr-${run}`;
const FROM = 'Acme <hello@acme.test>';

const RELAY = {
  'X-SES-CONFIGURATION-SET': 'no-bounce-reports',
  'X-Ses-Source-Arn': 'arn:aws:ses:eu-west-1:123456789012:identity/other.test',
  'X-PM-Message-Stream': 'broadcast',
  'X-Mailgun-Drop-Message': 'yes',
  'X-Mailgun-Variables': '{"a":1}',
  'X-SMTPAPI': '{"filters":{"bypass_list_management":{"settings":{"enable":1}}}}',
};
const TRACE = {
  Received: 'from mx.bank.test by mx.example.com',
  'ARC-Seal': 'i=1; a=rsa-sha256; cv=none; d=bank.test; s=x; b=abc',
  'Resent-From': 'ceo@bank.test',
  'Authentication-Results': 'mx.example.com; dkim=pass header.d=bank.test',
  'Disposition-Notification-To': 'tracker@evil.test',
};

const outgoingCount = async () =>
  Number(
    (await world.stores.pool.query('SELECT count(*) AS n FROM outgoing_emails WHERE tenant_id = $1', [A]))
      .rows[0].n,
  );

beforeAll(async () => {
  [world, tls] = await Promise.all([openSendingWorld({ sender: false }), selfSignedPair('localhost')]);
  await world.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(world.app.server.address() as AddressInfo).port}`;
  key = (await createKey(world.app, jwtFor(wallClock, A), A, { scopes: ['email:send', 'email:read'] })).key;
  submission = await startTlsSubmission(world.app, tls);
}, 120_000);

afterAll(() => closeAll(submission, world));

const post = async (path: string, body: unknown) => {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { code?: string; message?: string } };
};
const mail = (headers: Record<string, string>) => ({
  from: FROM,
  to: 'someone@example.com',
  subject: 'hi',
  text: 'hi',
  headers,
});

describe('relay-steering and trace headers', () => {
  it('POST /emails/send and /emails/batch: each → 400 naming the header; nothing queued', async () => {
    const before = await outgoingCount();
    for (const [name, value] of Object.entries({ ...RELAY, ...TRACE })) {
      for (const variant of [name, name.toLowerCase()]) {
        const one = await post('/emails/send', mail({ [variant]: value }));
        expect(one.status, variant).toBe(400);
        expect(one.body.code).toBe('FST_ERR_VALIDATION');
        if (name in RELAY) expect(one.body.message).toContain(variant);
      }
      const batch = await post('/emails/batch', [mail({ 'X-Campaign': 'ok' }), mail({ [name]: value })]);
      expect(batch.status, name).toBe(400);
    }
    // A header of the tenant's own is still passed on.
    expect((await post('/emails/send', mail({ 'X-Campaign': 'c-1' }))).status).toBe(202);
    expect(await outgoingCount()).toBe(before + 1);
  });

  it('the Resend compatibility through the resend package: refused, nothing queued', async () => {
    const before = await outgoingCount();
    const resend = new Resend(key, { baseUrl: `${base}/compat/resend` });
    const { data, error } = await resend.emails.send({
      from: FROM,
      to: 'someone@example.com',
      subject: 'hi',
      text: 'hi',
      headers: { 'X-SES-CONFIGURATION-SET': 'no-bounce-reports' },
    });
    expect(data).toBeNull();
    expect(error?.message).toContain('X-SES-CONFIGURATION-SET');
    expect(await outgoingCount()).toBe(before);
  });

  it('SMTP submission through nodemailer: 550 5.7.1 naming the header; nothing queued', async () => {
    const before = await outgoingCount();
    const transport = submissionClient(submission.port, tls, key);
    for (const [name, value] of Object.entries(RELAY)) {
      const sent = transport.sendMail({
        from: FROM,
        to: 'someone@example.com',
        subject: 'hi',
        text: 'hi',
        headers: { [name]: value },
      });
      await expect(sent, name).rejects.toMatchObject({ responseCode: 550 });
      await expect(sent).rejects.toThrow(/5\.7\.1 header .* steers the relay account/i);
    }
    expect(await outgoingCount()).toBe(before);
    // Trace headers of hops before Tern are not passed on (only X-… and list/threading headers are).
    const ok = await transport.sendMail({
      from: FROM,
      to: 'someone@example.com',
      subject: 'hi',
      text: 'hi',
      headers: { ...TRACE, 'X-Campaign': 'c-2' },
    });
    const id = /queued as (em_[A-Za-z0-9]{24})/.exec(ok.response)?.[1];
    const { rows } = await world.stores.pool.query<{ headers: Record<string, string> }>(
      "SELECT message->'headers' AS headers FROM outgoing_emails WHERE tenant_id = $1 AND id = $2",
      [A, id],
    );
    const headers = Object.keys(rows[0]?.headers ?? {});
    expect(headers).toEqual(['x-campaign']);
    transport.close();
  });
});
