import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../../test/support/dns-server.js';
import { type SubmissionServer, selfSignedPair, type TlsPair } from '../../src/index.js';
import { publish, testDomains } from '../domains-support.js';
import {
  attachmentDescription,
  openSendingWorld,
  type SendingWorld,
  waitForStatus,
  wallClock,
} from '../sending-support.js';
import { startTlsSubmission, submissionClient } from '../submission/session.js';
import { bearer, closeAll, createKey, jwtFor, suffix } from '../support.js';

// /compat/resend (SPEC §22) driven by the official `resend` npm package (pinned devDependency) as
// the client, over a real socket, into the real send path (Postgres, the log, projector, sender).
describe('/compat/resend', () => {
  let world: SendingWorld;
  let dns: TestDnsServer;
  let base: string;
  let resend: Resend;
  let owner: Resend;
  const run = suffix();
  const A = `resend-a-${run}`;
  let ownerJwt: string;
  let key: string;
  let readKey: string;

  const FROM = 'Acme <hello@acme.test>';

  beforeAll(async () => {
    dns = await startTestDnsServer();
    world = await openSendingWorld({
      app: (stores, log) => ({ features: { domains: { domains: testDomains(stores.pool, log, dns) } } }),
    });
    await world.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(world.app.server.address() as AddressInfo).port}/compat/resend`;
    ownerJwt = jwtFor(wallClock, A);
    key = (
      await createKey(world.app, ownerJwt, A, {
        scopes: ['email:send', 'email:read', 'contacts:read', 'contacts:write'],
      })
    ).key;
    readKey = (await createKey(world.app, ownerJwt, A, { scopes: ['email:read'] })).key;
    resend = new Resend(key, { baseUrl: base });
    // Domain writes take a dashboard session (SPEC §20): the package sends it as its bearer key.
    owner = new Resend(ownerJwt, { baseUrl: base });
  }, 120_000);

  afterAll(() => closeAll(world, dns));

  describe('emails through the resend package', () => {
    it('send to an array: one email id, every `to` on get, each recipient its own outcome (SPEC §22)', async () => {
      const { data, error } = await resend.emails.send({
        from: FROM,
        to: ['delivered@sandbox.test', 'bounced@sandbox.test'],
        subject: 'Two of them',
        text: 'Hi both',
        tags: [{ name: 'kind', value: 'pair' }],
      });
      expect(error).toBeNull();
      await waitForStatus(world.app, key, data!.id, 'BOUNCED', ['email.delivered', 'email.bounced']);
      const got = await resend.emails.get(data!.id);
      expect(got.data).toMatchObject({
        id: data!.id,
        to: ['delivered@sandbox.test', 'bounced@sandbox.test'],
        last_event: 'bounced',
      });
      const detail = await world.app.inject({
        method: 'GET',
        url: `/emails/${data!.id}`,
        headers: bearer(key),
      });
      expect(detail.json()).toMatchObject({
        toEmail: 'delivered@sandbox.test',
        tags: ['kind:pair'],
        recipients: [
          { email: 'delivered@sandbox.test', type: 'to', status: 'DELIVERED' },
          { email: 'bounced@sandbox.test', type: 'to', status: 'BOUNCED' },
        ],
      });
    });

    it('send: { id } at once; get: Resend’s email object, last_event delivered', async () => {
      const { data, error } = await resend.emails.send({
        from: FROM,
        to: ['delivered@sandbox.test'],
        cc: 'cc@example.com',
        bcc: ['hidden@example.com'],
        replyTo: 'support@acme.test',
        subject: 'Hello from resend-node',
        html: '<p>Hi</p>',
        text: 'Hi',
        tags: [{ name: 'category', value: 'welcome' }],
        headers: { 'X-Entity-Ref-ID': 'r-1' },
      });
      expect(error).toBeNull();
      expect(data!.id).toMatch(/^em_/);
      await waitForStatus(world.app, key, data!.id, 'DELIVERED', ['email.delivered']);
      const got = await resend.emails.get(data!.id);
      expect(got.error).toBeNull();
      expect(got.data).toMatchObject({
        object: 'email',
        id: data!.id,
        to: ['delivered@sandbox.test'],
        from: FROM,
        subject: 'Hello from resend-node',
        cc: ['cc@example.com'],
        bcc: ['hidden@example.com'],
        reply_to: ['support@acme.test'],
        last_event: 'delivered',
        scheduled_at: null,
      });
      expect(got.data!.created_at).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect((got.data as unknown as { tags: unknown }).tags).toEqual([
        { name: 'category', value: 'welcome' },
      ]);
    });

    it('batch: { data: [{ id }] } in order, every email delivered', async () => {
      const { data, error } = await resend.batch.send([
        { from: FROM, to: 'delivered@sandbox.test', subject: 'B1', text: 'one' },
        { from: FROM, to: ['delivered@sandbox.test'], subject: 'B2', text: 'two' },
      ]);
      expect(error).toBeNull();
      const ids = data!.data.map((d) => d.id);
      expect(ids).toHaveLength(2);
      for (const id of ids) await waitForStatus(world.app, key, id, 'DELIVERED');
    });

    it('scheduled: update moves it, get shows the new time, cancel stops it (last_event canceled)', async () => {
      const first = new Date(Date.now() + 3600_000).toISOString();
      const later = new Date(Date.now() + 7200_000).toISOString();
      const { data } = await resend.emails.send({
        from: FROM,
        to: 'delivered@sandbox.test',
        subject: 'Later',
        text: 'later',
        scheduledAt: first,
      });
      const id = data!.id;
      await waitForStatus(world.app, key, id, 'SCHEDULED', ['email.queued']);
      const updated = await resend.emails.update({ id, scheduledAt: later });
      expect(updated).toMatchObject({ error: null, data: { object: 'email', id } });
      const got = await resend.emails.get(id);
      expect(got.data).toMatchObject({ last_event: 'scheduled', scheduled_at: later });
      const cancelled = await resend.emails.cancel(id);
      expect(cancelled).toMatchObject({ error: null, data: { object: 'email', id } });
      await waitForStatus(world.app, key, id, 'CANCELLED');
      expect((await resend.emails.get(id)).data!.last_event).toBe('canceled');
      // A cancelled email is no longer scheduled: Resend's validation_error.
      const again = await resend.emails.update({ id, scheduledAt: later });
      expect(again.error).toMatchObject({ statusCode: 422, name: 'validation_error' });
    });

    it('list: Resend’s list, newest first, paged with after = the last id', async () => {
      const page1 = await resend.emails.list({ limit: 2 });
      expect(page1.error).toBeNull();
      expect(page1.data).toMatchObject({ object: 'list', has_more: true });
      expect(page1.data!.data).toHaveLength(2);
      const lastId = page1.data!.data[1]!.id;
      const page2 = await resend.emails.list({ limit: 2, after: lastId });
      expect(page2.error).toBeNull();
      const seen = [...page1.data!.data, ...page2.data!.data].map((e) => e.id);
      expect(new Set(seen).size).toBe(seen.length);
    });

    it('errors in Resend’s shape: no key, a wrong key, a missing scope, bad input, unknown id, two `to`', async () => {
      const wrong = await new Resend('tern_live_not_a_key', { baseUrl: base }).emails.send({
        from: FROM,
        to: 'a@b.test',
        subject: 's',
        text: 't',
      });
      expect(wrong.error).toMatchObject({ statusCode: 403, name: 'invalid_api_key' });
      const noKey = await fetch(`${base}/emails`, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      });
      expect(noKey.status).toBe(401);
      expect(await noKey.json()).toEqual({
        statusCode: 401,
        name: 'missing_api_key',
        message: 'Missing API key in the authorization header',
      });
      const restricted = await new Resend(readKey, { baseUrl: base }).emails.send({
        from: FROM,
        to: 'a@b.test',
        subject: 's',
        text: 't',
      });
      expect(restricted.error).toMatchObject({ statusCode: 401, name: 'restricted_api_key' });
      const invalid = await resend.emails.send({
        from: 'not an address',
        to: 'a@b.test',
        subject: 's',
        text: 't',
      });
      expect(invalid.error).toMatchObject({ statusCode: 422, name: 'validation_error' });
      expect(invalid.error!.message).toMatch(/from/);
      // to + cc + bcc ≤ 50 (SPEC §22): 51 is Resend's 422, naming `to`.
      const many = await resend.emails.send({
        from: FROM,
        to: Array.from({ length: 40 }, (_, i) => `r${i}@b.test`),
        cc: Array.from({ length: 11 }, (_, i) => `c${i}@b.test`),
        subject: 's',
        text: 't',
      });
      expect(many.error).toMatchObject({ statusCode: 422, name: 'validation_error' });
      expect(many.error!.message).toMatch(/at most 50 addresses together \(got 51\)/);
      const empty = await resend.emails.send({ from: FROM, to: [], subject: 's', text: 't' });
      expect(empty.error).toMatchObject({ statusCode: 422, name: 'missing_required_field' });
      const bad = await resend.emails.send({ from: FROM, to: ['a@b.test', 'nope'], subject: 's', text: 't' });
      expect(bad.error).toMatchObject({ statusCode: 422, name: 'validation_error' });
      expect(bad.error!.message).toMatch(/to/);
      const missing = await resend.emails.get('em_000000000000000000000000');
      expect(missing.error).toMatchObject({ statusCode: 404, name: 'not_found' });
      // Attachments from a URL: Tern fetches nothing a caller points at.
      const remote = await resend.emails.send({
        from: FROM,
        to: 'a@b.test',
        subject: 's',
        text: 't',
        attachments: [{ filename: 'a.txt', path: 'http://127.0.0.1:1/a.txt' }],
      });
      expect(remote.error).toMatchObject({ statusCode: 422, name: 'validation_error' });
      expect(remote.error!.message).toMatch(/does not fetch attachments from a URL/);
      const badBase64 = await resend.emails.send({
        from: FROM,
        to: 'a@b.test',
        subject: 's',
        text: 't',
        attachments: [{ filename: 'a.txt', content: 'not base64!' }],
      });
      expect(badBase64.error).toMatchObject({ statusCode: 422, name: 'validation_error' });
      expect(badBase64.error!.message).toMatch(/standard base64/);
    });

    it('attachments as the package sends them (a Buffer, content_type, content_id): kept, described by the sandbox', async () => {
      const pdf = randomBytes(200_000);
      const logo = randomBytes(500);
      const { data, error } = await resend.emails.send({
        from: FROM,
        to: 'delivered@sandbox.test',
        subject: 'Invoice',
        html: '<p>Invoice</p><img src="cid:logo">',
        attachments: [
          { filename: 'invoice.pdf', content: pdf, contentType: 'application/pdf' },
          { filename: 'logo.png', content: logo.toString('base64'), contentId: 'logo' },
        ],
      });
      expect(error).toBeNull();
      await waitForStatus(world.app, key, data!.id, 'DELIVERED', ['email.delivered']);
      const content = await world.app.inject({ url: `/emails/${data!.id}/content`, headers: bearer(key) });
      expect(content.statusCode, content.body).toBe(200);
      expect(content.json().attachments).toEqual([
        attachmentDescription('invoice.pdf', 'application/pdf', null, pdf),
        attachmentDescription('logo.png', 'image/png', 'logo', logo),
      ]);
    });

    it('an Idempotency-Key through the package: the same id, one email', async () => {
      const body = { from: FROM, to: 'delivered@sandbox.test', subject: 'Idem', text: 'x' };
      const a = await resend.emails.send(body, { idempotencyKey: `k-${run}` });
      const b = await resend.emails.send(body, { idempotencyKey: `k-${run}` });
      expect(b.data!.id).toBe(a.data!.id);
    });
  });

  describe('domains through the resend package', () => {
    it('create (records), get, list, verify, remove; an API key may read but not write', async () => {
      const name = `r${run}.example.com`;
      const created = await owner.domains.create({ name });
      expect(created.error).toBeNull();
      expect(created.data).toMatchObject({ object: 'domain', name });
      const records = created.data!.records;
      expect(records.map((r) => r.record)).toEqual(['DKIM', 'SPF', 'SPF', 'DMARC']);
      expect(records.find((r) => r.type === 'MX')).toMatchObject({ priority: 10 });
      const id = created.data!.id;
      const listed = await resend.domains.list();
      expect(listed.data!.data.map((d) => d.id)).toContain(id);
      // Publish Tern's records at the test's DNS: verify turns the domain verified.
      const detail = await world.app.inject({ url: `/domains/${id}`, headers: bearer(ownerJwt) });
      publish(dns, detail.json());
      expect(await owner.domains.verify(id)).toMatchObject({ error: null, data: { object: 'domain', id } });
      expect((await resend.domains.get(id)).data).toMatchObject({ id, status: 'verified' });
      const denied = await resend.domains.create({ name: `x${run}.example.com` });
      expect(denied.error).toMatchObject({ statusCode: 401, name: 'restricted_api_key' });
      expect(await owner.domains.remove(id)).toMatchObject({
        error: null,
        data: { object: 'domain', id, deleted: true },
      });
      expect((await resend.domains.get(id)).error).toMatchObject({ statusCode: 404, name: 'not_found' });
    });
  });

  describe('audiences and contacts through the resend package', () => {
    it('audience create; contacts create (twice: added to the audience), list, get by id and email, update, remove', async () => {
      const name = `news-${run}`;
      const audience = await resend.audiences.create({ name });
      expect(audience.error).toBeNull();
      const audienceId = audience.data!.id;
      expect(audience.data).toMatchObject({ name });
      const ada = await resend.contacts.create({
        audienceId,
        email: `Ada-${run}@example.com`,
        firstName: 'Ada',
        lastName: 'Lovelace',
        unsubscribed: false,
      });
      expect(ada.error).toBeNull();
      expect(ada.data).toMatchObject({ object: 'contact' });
      const bob = await resend.contacts.create({ audienceId, email: `bob-${run}@example.com` });
      // The same address again (another audience): the same contact, now in both.
      const other = await resend.audiences.create({ name: `other-${run}` });
      const again = await resend.contacts.create({
        audienceId: other.data!.id,
        email: `ada-${run}@example.com`,
      });
      expect(again.data!.id).toBe(ada.data!.id);

      const listed = await resend.contacts.list({ audienceId });
      expect(listed.error).toBeNull();
      expect(listed.data).toMatchObject({ object: 'list', has_more: false });
      expect(listed.data!.data.map((c) => c.id).sort()).toEqual([ada.data!.id, bob.data!.id].sort());
      const page1 = await resend.contacts.list({ audienceId, limit: 1 });
      expect(page1.data!.has_more).toBe(true);
      const page2 = await resend.contacts.list({ audienceId, limit: 1, after: page1.data!.data[0]!.id });
      expect(page2.data!.data[0]!.id).not.toBe(page1.data!.data[0]!.id);
      expect(page2.data!.has_more).toBe(false);

      const byId = await resend.contacts.get(ada.data!.id);
      expect(byId.data).toMatchObject({
        object: 'contact',
        id: ada.data!.id,
        email: `ada-${run}@example.com`,
        first_name: 'Ada',
        last_name: 'Lovelace',
        unsubscribed: false,
      });
      const byEmail = await resend.contacts.get({ audienceId, email: `ada-${run}@example.com` });
      expect(byEmail.data!.id).toBe(ada.data!.id);

      const updated = await resend.contacts.update({
        audienceId,
        email: `ada-${run}@example.com`,
        unsubscribed: true,
      });
      expect(updated).toMatchObject({ error: null, data: { object: 'contact', id: ada.data!.id } });
      expect((await resend.contacts.get(ada.data!.id)).data!.unsubscribed).toBe(true);

      expect((await resend.audiences.get(audienceId)).data).toMatchObject({ id: audienceId, name });
      expect((await resend.audiences.list()).data!.data.map((a) => a.name)).toContain(name);

      // Removing from an audience: the contact leaves it; removing by id deletes it.
      const left = await resend.contacts.remove({ audienceId, email: `bob-${run}@example.com` });
      expect(left).toMatchObject({
        error: null,
        data: { object: 'contact', contact: bob.data!.id, deleted: true },
      });
      expect((await resend.contacts.list({ audienceId })).data!.data.map((c) => c.id)).toEqual([
        ada.data!.id,
      ]);
      expect((await resend.contacts.remove(bob.data!.id)).error).toBeNull();
      expect((await resend.contacts.get(bob.data!.id)).error).toMatchObject({
        statusCode: 404,
        name: 'not_found',
      });

      // Deleting the audience takes it off its contacts; the contacts stay.
      expect(await resend.audiences.remove(audienceId)).toMatchObject({
        error: null,
        data: { deleted: true },
      });
      expect((await resend.audiences.get(audienceId)).error).toMatchObject({
        statusCode: 404,
        name: 'not_found',
      });
      expect((await resend.contacts.get(ada.data!.id)).error).toBeNull();
    });

    it('contacts errors in Resend’s shape: bad address, unknown audience id, key without contacts scopes', async () => {
      const audienceId = (await resend.audiences.create({ name: `e-${run}` })).data!.id;
      const bad = await resend.contacts.create({ audienceId, email: 'not-an-address' });
      expect(bad.error).toMatchObject({ statusCode: 422, name: 'validation_error' });
      expect((await resend.contacts.list({ audienceId: '!!' })).error).toMatchObject({ statusCode: 404 });
      const restricted = await new Resend(readKey, { baseUrl: base }).contacts.create({
        audienceId,
        email: `x-${run}@example.com`,
      });
      expect(restricted.error).toMatchObject({ statusCode: 401, name: 'restricted_api_key' });
      const badName = await resend.audiences.create({ name: 'no/slash' });
      expect(badName.error).toMatchObject({ statusCode: 422, name: 'validation_error' });
    });
  });

  describe('the Tern routes added for the compat surface, over a real socket', () => {
    const root = () => base.replace(/\/compat\/resend$/, '');
    it('PATCH /emails/:id: bad scheduledAt → 400 naming the field; a sent email → 409 ALREADY_SENT', async () => {
      const { data } = await resend.emails.send({
        from: FROM,
        to: 'delivered@sandbox.test',
        subject: 'S',
        text: 't',
      });
      const id = data!.id;
      const patch = (body: unknown) =>
        fetch(`${root()}/emails/${id}`, {
          method: 'PATCH',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const bad = await patch({ scheduledAt: 'tomorrow' });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({
        code: 'FST_ERR_VALIDATION',
        message: expect.stringMatching(/scheduledAt/),
      });
      const past = await patch({ scheduledAt: new Date(Date.now() - 1000).toISOString() });
      expect(past.status).toBe(400);
      await waitForStatus(world.app, key, id, 'DELIVERED');
      const sent = await patch({ scheduledAt: new Date(Date.now() + 3600_000).toISOString() });
      expect(sent.status).toBe(409);
      expect(await sent.json()).toMatchObject({ code: 'ALREADY_SENT' });
    });

    it('GET /contacts?email= finds one contact (any case); a too long address → 400', async () => {
      const created = await resend.contacts.create({ email: `find-${run}@example.com` });
      expect(created.error).toBeNull();
      const found = await fetch(`${root()}/contacts?email=${encodeURIComponent(`FIND-${run}@example.com`)}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(found.status).toBe(200);
      const body = (await found.json()) as { data: { id: string }[] };
      expect(body.data.map((c) => c.id)).toEqual([created.data!.id]);
      const long = await fetch(`${root()}/contacts?email=${'a'.repeat(321)}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(long.status).toBe(400);
    });
  });
});

// Issue 40 item 5: a tenant cannot steer the operator's relay account. Headers such as
// X-SES-CONFIGURATION-SET, X-PM-Message-Stream, X-Mailgun-*, X-SMTPAPI are refused the same on
// every path — POST /emails/send and /emails/batch over a socket (400), the Resend compatibility
// through the `resend` package, SMTP submission through nodemailer (550 5.7.1) — and trace headers
// (Received, ARC-*, Resent-*, Authentication-Results, Disposition-Notification-To) over HTTP.
describe('relay headers', () => {
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
      const id = /queued as (em_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20})/.exec(ok.response)?.[1];
      const { rows } = await world.stores.pool.query<{ headers: Record<string, string> }>(
        "SELECT message->'headers' AS headers FROM outgoing_emails WHERE tenant_id = $1 AND id = $2",
        [A, id],
      );
      const headers = Object.keys(rows[0]?.headers ?? {});
      expect(headers).toEqual(['x-campaign']);
      transport.close();
    });
  });
});
