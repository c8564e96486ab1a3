import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import type { Domain } from '@tern/contracts';
import { createEventStream, createPostgresEventLog, type PostgresEventLog } from '@tern/event-log';
import type { SendingDomains } from '@tern/sending-domains';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../../test/support/dns-server.js';
import {
  BOUNCE_MX,
  clearPrivateKey,
  keyFingerprints,
  keyPiecesIn,
  publish,
  SPF,
  testDomains,
} from '../domains-support.js';
import {
  bearer,
  buildApp,
  closeAll,
  createKey,
  jwtFor,
  openStores,
  type Stores,
  testTenants,
} from '../support.js';

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
    expect(d.id).toMatch(/^dom_[A-Za-z0-9]{24}$/);
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
    expect((await call('POST', `/domains/${d.id}/verify`, jwtFor(clock, A, 'member'))).statusCode).toBe(403);
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
