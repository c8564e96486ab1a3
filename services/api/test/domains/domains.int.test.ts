import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import type { Domain } from '@tern/contracts';
import { createEventStream, createPostgresEventLog, type PostgresEventLog } from '@tern/event-log';
import { createSandboxProvider, createSmtpProvider, type Sender } from '@tern/sender';
import { type SendingDomains, verpAddress } from '@tern/sending-domains';
import type { FastifyInstance } from 'fastify';
import { dkimVerify } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../../test/support/dns-server.js';
import { waitFor } from '../../../../test/support/services.js';
import { type SmtpSink, type SunkMessage, startSmtpSink } from '../../../../test/support/smtp-sink.js';
import type { DomainPolicy } from '../../src/index.js';
import {
  BOUNCE_MX,
  clearPrivateKey,
  keyFingerprints,
  keyPiecesIn,
  publish,
  SPF,
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
import {
  bearer,
  buildApp,
  closeAll,
  createKey,
  jwtFor,
  openStores,
  type Stores,
  suffix,
  testTenants,
} from '../support.js';

describe('sending domains', () => {
  // SPEC §20 `/domains*` on the real app: statuses per route, the DNS through a server in this
  // process, the private key nowhere in clear (answers, logs, the event log, a pg_dump).

  const { clock, A, B } = testTenants('dom');
  const run = promisify(execFile);

  let stores: Stores;
  let dns: TestDnsServer;
  let log: PostgresEventLog;
  let domains: SendingDomains;
  let app: FastifyInstance;
  /** Every log line of the app and of the domains service. */
  const logLines: string[] = [];
  /** Every answer body the tests received. */
  const answers: string[] = [];

  const owner = () => jwtFor(clock, A);
  let n = 0;
  const fresh = () => `d${++n}-${process.pid}.example.test`;

  async function call(method: string, url: string, token: string | Record<string, string>, payload?: object) {
    const headers = typeof token === 'string' ? bearer(token) : token;
    const res = await app.inject({ method: method as 'GET', url, headers, ...(payload ? { payload } : {}) });
    answers.push(res.body);
    return res;
  }

  const add = async (name = fresh(), token = owner()) => {
    const res = await call('POST', '/domains', token, { name });
    if (res.statusCode !== 201) throw new Error(`add: ${res.statusCode} ${res.body}`);
    return res.json() as Domain;
  };

  beforeAll(async () => {
    stores = await openStores();
    dns = await startTestDnsServer();
    log = createPostgresEventLog({ pool: stores.pool, pollIntervalMs: 20 });
    await log.ensureSchema();
    const sink = new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    const logger = {
      info: (obj: object, msg?: string) => logLines.push(JSON.stringify({ ...obj, msg })),
      warn: (obj: object, msg?: string) => logLines.push(JSON.stringify({ ...obj, msg })),
      error: (obj: object, msg?: string) => logLines.push(JSON.stringify({ ...obj, msg })),
    };
    domains = testDomains(stores.pool, createEventStream(log), dns, clock.now, logger);
    app = await buildApp(stores, clock, {
      limits: { rateLimit: false },
      features: { domains: { domains } },
      http: { logger: { level: 'trace', stream: sink } },
    });
  });

  afterAll(() => closeAll(app, log, dns, stores));

  describe('POST /domains', () => {
    it('201: a pending domain with the four records to publish, each pending', async () => {
      const name = fresh();
      const res = await call('POST', '/domains', owner(), { name: `  ${name.toUpperCase()}. ` });
      expect(res.statusCode).toBe(201);
      const d = res.json() as Domain;
      expect(d).toMatchObject({
        name,
        status: 'pending',
        verifiedAt: null,
        createdAt: clock.now().toISOString(),
      });
      expect(d.id).toMatch(/^dom_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20}$/);
      expect(d.records).toEqual([
        {
          purpose: 'dkim',
          type: 'TXT',
          name: `tern202606-${createHash('sha256').update(d.id).digest('hex').slice(0, 8)}._domainkey.${name}`,
          value: expect.stringMatching(
            /^v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA[A-Za-z0-9+/]+=*$/,
          ),
          status: 'pending',
        },
        {
          purpose: 'return_path_mx',
          type: 'MX',
          name: `tern-bounces.${name}`,
          value: BOUNCE_MX,
          status: 'pending',
        },
        {
          purpose: 'return_path_spf',
          type: 'TXT',
          name: `tern-bounces.${name}`,
          value: SPF,
          status: 'pending',
        },
        {
          purpose: 'dmarc',
          type: 'TXT',
          name: `_dmarc.${name}`,
          value: 'v=DMARC1; p=none;',
          status: 'pending',
        },
      ]);
      // The DKIM key is 2048 bits: its SubjectPublicKeyInfo is 294 bytes (392 base64 characters).
      const p = d.records[0]!.value.split('p=')[1]!;
      expect(Buffer.from(p, 'base64')).toHaveLength(294);
    });

    it('400 names the field for a name that is not a domain; nothing is added', async () => {
      for (const name of [
        'localhost',
        '-bad.example',
        'a..b',
        '192.168.0.1',
        'exa mple.com',
        `${'x'.repeat(64)}.com`,
      ]) {
        const res = await call('POST', '/domains', owner(), { name });
        expect(res.statusCode, name).toBe(400);
        expect(res.json().message).toBe(
          'body.name: name must be a domain name such as example.com (an IDN in its xn-- form)',
        );
      }
      const missing = await call('POST', '/domains', owner(), {});
      expect(missing.statusCode).toBe(400);
      expect(missing.json().message).toMatch(/^body\.name: /);
      const extra = await call('POST', '/domains', owner(), { name: fresh(), selector: 'mine' });
      expect(extra.statusCode).toBe(400);
      const list = await call('GET', '/domains?limit=100', owner());
      expect((list.json() as { data: Domain[] }).data.map((d) => d.name)).not.toContain('localhost');
    });

    it('409 for a name the tenant already added; another tenant adds it with its own key', async () => {
      const name = fresh();
      const mine = await add(name);
      const again = await call('POST', '/domains', owner(), { name: name.toUpperCase() });
      expect(again.statusCode).toBe(409);
      expect(again.json()).toMatchObject({ code: 'DOMAIN_EXISTS', message: `Domain ${name} already exists` });
      const theirs = await add(name, jwtFor(clock, B, 'admin'));
      expect(theirs.id).not.toBe(mine.id);
      expect(theirs.records[0]!.value).not.toBe(mine.records[0]!.value);
    });

    it('401 without a credential; 403 for a member and for any API key, whatever its scopes', async () => {
      expect((await call('POST', '/domains', {}, { name: fresh() })).statusCode).toBe(401);
      const member = await call('POST', '/domains', jwtFor(clock, A, 'member'), { name: fresh() });
      expect(member.statusCode).toBe(403);
      expect(member.json().message).toBe('Requires the role owner or admin');
      const { key } = await createKey(app, owner(), A, { scopes: ['email:send', 'projects:write'] });
      const byKey = await call('POST', '/domains', key, { name: fresh() });
      expect(byKey.statusCode).toBe(403);
      expect(byKey.json().message).toBe('Missing required API key scope');
    });
  });

  describe('GET /domains, GET /domains/:id', () => {
    it('200 for any role and for a key with email:send; 403 for a key without; the list is the tenant’s own', async () => {
      const d = await add();
      for (const token of [
        jwtFor(clock, A, 'member'),
        (await createKey(app, owner(), A, { scopes: ['email:send'] })).key,
      ]) {
        const one = await call('GET', `/domains/${d.id}`, token);
        expect(one.statusCode).toBe(200);
        expect(one.json()).toEqual(d);
        const list = await call('GET', '/domains?limit=100', token);
        expect(list.statusCode).toBe(200);
        expect((list.json() as { data: Domain[] }).data.map((x) => x.id)).toContain(d.id);
      }
      const { key } = await createKey(app, owner(), A, { scopes: ['email:read'] });
      const refused = await call('GET', '/domains', key);
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toMatchObject({
        message: 'Missing required API key scope',
        missingScope: 'email:send',
      });
      const other = await call('GET', '/domains?limit=100', jwtFor(clock, B));
      expect((other.json() as { data: Domain[] }).data.map((x) => x.id)).not.toContain(d.id);
    });

    it('pages newest first with meta; 400 for a bad limit', async () => {
      const page = await call('GET', '/domains?page=1&limit=2', owner());
      expect(page.statusCode).toBe(200);
      const body = page.json() as { data: Domain[]; meta: { total: number; limit: number } };
      expect(body.data).toHaveLength(2);
      expect(body.meta.limit).toBe(2);
      expect(body.meta.total).toBeGreaterThanOrEqual(2);
      expect((await call('GET', '/domains?limit=0', owner())).statusCode).toBe(400);
    });

    it('404 for an unknown id and for another tenant’s domain', async () => {
      const d = await add();
      expect((await call('GET', '/domains/dom_nope', owner())).statusCode).toBe(404);
      const foreign = await call('GET', `/domains/${d.id}`, jwtFor(clock, B));
      expect(foreign.statusCode).toBe(404);
      expect(foreign.json().message).toBe('Domain not found');
    });
  });

  describe('POST /domains/:id/verify', () => {
    it('checks now: pending while records are missing (named), verified once they match', async () => {
      const d = await add();
      const before = await call('POST', `/domains/${d.id}/verify`, owner());
      expect(before.statusCode).toBe(200);
      expect(before.json()).toMatchObject({ status: 'pending', lastCheckedAt: clock.now().toISOString() });
      expect(before.json().reason).toContain(`${d.records[0]!.name} (TXT)`);
      publish(dns, d);
      const after = await call('POST', `/domains/${d.id}/verify`, jwtFor(clock, A, 'admin'));
      expect(after.json()).toMatchObject({
        status: 'verified',
        reason: null,
        verifiedAt: clock.now().toISOString(),
      });
    });

    it('403 for a member and for keys; 404 for another tenant’s domain', async () => {
      const d = await add();
      expect((await call('POST', `/domains/${d.id}/verify`, jwtFor(clock, A, 'member'))).statusCode).toBe(
        403,
      );
      const { key } = await createKey(app, owner(), A, { scopes: ['email:send'] });
      expect((await call('POST', `/domains/${d.id}/verify`, key)).statusCode).toBe(403);
      expect((await call('POST', `/domains/${d.id}/verify`, jwtFor(clock, B))).statusCode).toBe(404);
    });
  });

  describe('DELETE /domains/:id', () => {
    it('204, then 404; another tenant’s → 404 and it stays', async () => {
      const d = await add();
      expect((await call('DELETE', `/domains/${d.id}`, jwtFor(clock, B))).statusCode).toBe(404);
      expect((await call('DELETE', `/domains/${d.id}`, jwtFor(clock, A, 'member'))).statusCode).toBe(403);
      expect((await call('DELETE', `/domains/${d.id}`, owner())).statusCode).toBe(204);
      expect((await call('GET', `/domains/${d.id}`, owner())).statusCode).toBe(404);
      expect((await call('DELETE', `/domains/${d.id}`, owner())).statusCode).toBe(404);
      const { rows } = await stores.pool.query('SELECT 1 FROM sending_domains WHERE id = $1', [d.id]);
      expect(rows).toHaveLength(0);
    });
  });

  describe('over a real socket', () => {
    it('bad input gets its 4xx with a body naming the problem', async () => {
      const url = await app.listen({ host: '127.0.0.1', port: 0 });
      try {
        const post = (body: string) =>
          fetch(`${url}/domains`, {
            method: 'POST',
            headers: { authorization: `Bearer ${owner()}`, 'content-type': 'application/json' },
            body,
          });
        const bad = await post(JSON.stringify({ name: 'not a domain' }));
        expect(bad.status).toBe(400);
        expect(((await bad.json()) as { message: string }).message).toMatch(/^body\.name: /);
        const broken = await post('{"name":');
        expect(broken.status).toBe(400);
        const unknown = await fetch(`${url}/domains/dom_unknown/verify`, {
          method: 'POST',
          headers: { authorization: `Bearer ${owner()}` },
        });
        expect(unknown.status).toBe(404);
      } finally {
        await app.server.close();
      }
    });
  });

  describe('the private key is nowhere in clear', () => {
    it('not in any answer, log line, event of the log, nor in a pg_dump of the database', async () => {
      const d = await add();
      publish(dns, d);
      await call('POST', `/domains/${d.id}/verify`, owner()); // verified: a domain.verified event
      dns.remove(d.records[0]!.name);
      clock.advance(25 * 3_600_000);
      await domains.runDue(); // failed: a domain.failed event
      await call('GET', `/domains/${d.id}`, owner());
      await call('GET', '/domains?limit=100', owner());

      const key = await clearPrivateKey(stores.pool, A, d.id);
      expect(key).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
      const pieces = keyFingerprints(key);
      expect(pieces.length).toBeGreaterThan(70);

      expect(keyPiecesIn(answers.join('\n'), pieces)).toEqual([]);
      expect(logLines.some((l) => l.includes(d.id))).toBe(true); // the logs did see the domain
      expect(keyPiecesIn(logLines.join('\n'), pieces)).toEqual([]);
      const { rows } = await stores.pool.query<{ value: string }>('SELECT value FROM event_log');
      const eventLog = rows.map((r) => r.value).join('\n');
      expect(eventLog).toContain(`${d.id}:failed:2`);
      expect(keyPiecesIn(eventLog, pieces)).toEqual([]);

      const { stdout: dump } = await run('pg_dump', ['--data-only', '--no-owner', stores.databaseUrl], {
        maxBuffer: 256 * 1024 * 1024,
      });
      // The dump holds the domain (its public key, its sealed private key), never the clear one.
      expect(dump).toContain(d.records[0]!.value.slice(-60));
      expect(dump).toMatch(/v1:[A-Za-z0-9+/]{100,}/);
      expect(keyPiecesIn(dump, pieces)).toEqual([]);
    });
  });
});

// Issue 40 item 11: a limit on sending domains per tenant (100 adds cost 19 s of key generation),
// and two tenants adding the same domain in one month must get different DKIM selectors — over a
// real socket, on the real app and Postgres.
describe('the limit on sending domains', () => {
  const MAX = 3;
  let stores: Stores;
  let dns: TestDnsServer;
  let app: FastifyInstance;
  let base: string;
  const run = suffix();

  beforeAll(async () => {
    stores = await openStores();
    dns = await startTestDnsServer();
    const log = createPostgresEventLog({ pool: stores.pool, pollIntervalMs: 20 });
    await log.ensureSchema();
    const domains = testDomains(stores.pool, createEventStream(log), dns, undefined, undefined, MAX);
    app = await buildApp(stores, wallClock, {
      limits: { rateLimit: false },
      features: { domains: { domains } },
    });
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  }, 60_000);

  afterAll(() => closeAll(app, dns, stores));

  const add = async (tenant: string, name: string) => {
    const res = await fetch(`${base}/domains`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${jwtFor(wallClock, tenant)}` },
      body: JSON.stringify({ name }),
    });
    return { status: res.status, body: (await res.json()) as Domain & { code?: string; message?: string } };
  };
  const count = async (tenant: string) =>
    Number(
      (await stores.pool.query('SELECT count(*) AS n FROM sending_domains WHERE tenant_id = $1', [tenant]))
        .rows[0].n,
    );

  describe('sending domains: per-tenant limit and DKIM selectors', () => {
    it('two tenants adding the same domain in one month get different DKIM selectors', async () => {
      const name = `shared-${run}.example.test`;
      const a = await add(`dlim-a-${run}`, name);
      const b = await add(`dlim-b-${run}`, name);
      expect([a.status, b.status]).toEqual([201, 201]);
      const dkim = (d: Domain) => d.records.find((r) => r.purpose === 'dkim')!.name;
      expect(dkim(a.body)).toMatch(/^tern\d{6}-[0-9a-f]{8}\._domainkey\./);
      expect(dkim(a.body)).not.toBe(dkim(b.body));
      const { rows } = await stores.pool.query<{ selector: string }>(
        'SELECT selector FROM sending_domains WHERE name = $1',
        [name],
      );
      expect(new Set(rows.map((r) => r.selector)).size).toBe(2);
    });

    it(`the ${MAX + 1}th domain of a tenant → 409 DOMAIN_LIMIT_REACHED; concurrent adds never pass the limit`, async () => {
      const tenant = `dlim-c-${run}`;
      for (let i = 0; i < MAX; i++) expect((await add(tenant, `d${i}-${run}.example.test`)).status).toBe(201);
      const over = await add(tenant, `over-${run}.example.test`);
      expect(over.status).toBe(409);
      expect(over.body.code).toBe('DOMAIN_LIMIT_REACHED');
      // The same name is still named as taken first.
      expect((await add(tenant, `d0-${run}.example.test`)).body.code).toBe('DOMAIN_EXISTS');
      expect(await count(tenant)).toBe(MAX);
      // Eight at once into a fresh tenant: exactly MAX created, the others refused.
      const racing = `dlim-r-${run}`;
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => add(racing, `r${i}-${run}.example.test`)),
      );
      expect(answers.filter((a) => a.status === 201)).toHaveLength(MAX);
      expect(
        answers.filter((a) => a.status === 409).every((a) => a.body.code === 'DOMAIN_LIMIT_REACHED'),
      ).toBe(true);
      expect(await count(racing)).toBe(MAX);
    });
  });
});

describe('sending from a verified domain', () => {
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
        const email = await waitForStatus(
          world.app,
          owner().authorization.slice(7),
          id,
          'FAILED',
          [],
          20_000,
        );
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
});
