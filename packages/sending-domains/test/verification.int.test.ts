import type { Domain, DomainEvent } from '@tern/contracts';
import { createEventStream, type EventStream, type PostgresEventLog } from '@tern/event-log';
import { createSecretBox } from '@tern/webhooks';
import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../test/support/dns-server.js';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import { createDnsChecker, createSendingDomains, type SendingDomains } from '../src/index.js';

/**
 * SPEC §20's verification on real components: a DNS server in this process (dns2, records set by
 * the tests), node:dns resolving through it (DNS_SERVERS), Postgres, the Postgres-table event log.
 * Only the clock is the test's: it moves days in a line.
 */

const HOUR = 3_600_000;
const BOUNCE_MX = 'bounces.tern.test';
const SPF = 'v=spf1 ip4:127.0.0.1 ~all';

let dns: TestDnsServer;
let db: LogDatabase;
let pool: pg.Pool;
let log: PostgresEventLog;
let now = new Date('2026-06-15T12:00:00.000Z');
let n = 0;

const tenant = `dom-t-${process.pid}`;
const nextId = () => `dom_test${process.pid}x${++n}`;
const fresh = () => `d${++n}-${process.pid}.example.test`;

function service(overrides: { log?: EventStream } = {}): SendingDomains {
  return createSendingDomains({
    pool,
    log: overrides.log ?? createEventStream(log),
    dns: createDnsChecker({ servers: [dns.server], timeoutMs: 500, tries: 1 }),
    sealer: createSecretBox('domains-test-secrets-key', 'dkim keys'),
    records: { bounceSubdomain: 'tern-bounces', bounceMxHost: BOUNCE_MX, spf: SPF },
    now: () => new Date(now.getTime()),
  });
}

const record = (d: Domain, purpose: string) => d.records.find((r) => r.purpose === purpose)!;

/** Publishes the domain's records as its owner would (all of them, or those named). */
function publish(d: Domain, only: readonly string[] = ['dkim', 'return_path_mx', 'return_path_spf']) {
  for (const r of d.records) {
    if (!only.includes(r.purpose)) continue;
    if (r.type === 'MX') dns.mx(r.name, r.value);
    else dns.txt(r.name, r.value);
  }
}

/** The domain events in the log, oldest first. */
async function loggedEvents(domainId: string): Promise<DomainEvent[]> {
  const { rows } = await pool.query<{ value: string }>(
    'SELECT value FROM event_log WHERE key = $1 ORDER BY seq',
    [domainId],
  );
  return rows.map((r) => JSON.parse(r.value) as DomainEvent);
}

beforeAll(async () => {
  dns = await startTestDnsServer();
  db = await openLogDatabase();
  ({ pool, log } = db);
});

afterAll(async () => {
  await db?.close();
  await dns?.close();
});

beforeEach(() => {
  now = new Date('2026-06-15T12:00:00.000Z');
  dns.healthy();
});

describe('sending domains: DNS verification (SPEC §20)', () => {
  it('is pending, then verified, then failed as its records appear, change and disappear', async () => {
    const domains = service();
    const added = await domains.add(tenant, nextId(), fresh());
    if (typeof added === 'string') throw new Error(`fresh name: ${added}`);
    expect(added.status).toBe('pending');
    expect(added.verifiedAt).toBeNull();
    expect(added.records.map((r) => [r.purpose, r.type, r.status])).toEqual([
      ['dkim', 'TXT', 'pending'],
      ['return_path_mx', 'MX', 'pending'],
      ['return_path_spf', 'TXT', 'pending'],
      ['dmarc', 'TXT', 'pending'],
    ]);
    expect(record(added, 'dkim').name).toMatch(
      new RegExp(`^tern202606-[0-9a-f]{8}\\._domainkey\\.${added.name.replaceAll('.', '\\.')}$`),
    );
    expect(record(added, 'dkim').value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]{300,}={0,2}$/);
    expect(record(added, 'return_path_mx')).toMatchObject({
      name: `tern-bounces.${added.name}`,
      value: BOUNCE_MX,
    });
    expect(record(added, 'return_path_spf')).toMatchObject({
      name: `tern-bounces.${added.name}`,
      value: SPF,
    });
    expect(record(added, 'dmarc')).toMatchObject({
      name: `_dmarc.${added.name}`,
      value: 'v=DMARC1; p=none;',
    });

    // Nothing published: still pending, every required record named as not found.
    let d = (await domains.verify(tenant, added.id))!;
    expect(d.status).toBe('pending');
    expect(d.reason).toBe(
      `not found: ${record(added, 'dkim').name} (TXT), tern-bounces.${added.name} (MX), tern-bounces.${added.name} (TXT)`,
    );

    // DKIM only (its 410-character value travels as two TXT strings, joined by the checker).
    publish(added, ['dkim']);
    d = (await domains.verify(tenant, added.id))!;
    expect(d.status).toBe('pending');
    expect(record(d, 'dkim').status).toBe('verified');
    expect(d.reason).toBe(`not found: tern-bounces.${added.name} (MX), tern-bounces.${added.name} (TXT)`);

    // The return path too: verified, with the time, and a domain.verified event in the log.
    publish(added, ['return_path_mx', 'return_path_spf']);
    now = new Date(now.getTime() + HOUR);
    d = (await domains.verify(tenant, added.id))!;
    expect(d).toMatchObject({ status: 'verified', reason: null, verifiedAt: now.toISOString() });
    expect(d.records.map((r) => r.status)).toEqual(['verified', 'verified', 'verified', 'pending']);
    let events = await loggedEvents(added.id);
    expect(events.map((e) => [e.id, e.type, e.data.status])).toEqual([
      [`${added.id}:verified:1`, 'domain.verified', 'verified'],
    ]);

    // The DKIM record changes: the daily check fails the domain and names the record.
    dns.remove(record(added, 'dkim').name);
    dns.txt(
      record(added, 'dkim').name,
      'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong',
    );
    now = new Date(now.getTime() + 23 * HOUR);
    expect(await domains.runDue()).toBe(0); // not due before a day has passed
    now = new Date(now.getTime() + HOUR);
    expect(await domains.runDue()).toBe(1);
    d = (await domains.get(tenant, added.id))!;
    expect(d.status).toBe('failed');
    expect(record(d, 'dkim').status).toBe('failed');
    expect(d.reason).toBe(`another value: ${record(added, 'dkim').name} (TXT)`);

    // Fixed, verified again by hand; then the record disappears: failed again, "not found".
    dns.remove(record(added, 'dkim').name);
    publish(added, ['dkim']);
    expect((await domains.verify(tenant, added.id))!.status).toBe('verified');
    dns.remove(record(added, 'dkim').name);
    now = new Date(now.getTime() + 24 * HOUR);
    expect(await domains.runDue()).toBe(1);
    d = (await domains.get(tenant, added.id))!;
    expect(d).toMatchObject({ status: 'failed', reason: `not found: ${record(added, 'dkim').name} (TXT)` });

    events = await loggedEvents(added.id);
    expect(events.map((e) => [e.id, e.type])).toEqual([
      [`${added.id}:verified:1`, 'domain.verified'],
      [`${added.id}:failed:2`, 'domain.failed'],
      [`${added.id}:verified:3`, 'domain.verified'],
      [`${added.id}:failed:4`, 'domain.failed'],
    ]);
    expect(events[1]!.data).toMatchObject({ name: added.name, status: 'failed' });
    // A failed domain is not polled: nothing is due however long we wait.
    now = new Date(now.getTime() + 30 * 24 * HOUR);
    expect(await domains.runDue()).toBe(0);
  });

  it('names a record published with a wrong value, and the domain stays pending', async () => {
    const domains = service();
    const added = (await domains.add(tenant, nextId(), fresh())) as Domain;
    publish(added, ['dkim', 'return_path_mx']);
    dns.txt(`tern-bounces.${added.name}`, 'v=spf1 include:elsewhere.example ~all');
    dns.txt(`tern-bounces.${added.name}`, 'google-site-verification=unrelated');
    const d = (await domains.verify(tenant, added.id))!;
    expect(d.status).toBe('pending');
    expect(record(d, 'return_path_spf').status).toBe('failed');
    expect(d.reason).toBe(`another value: tern-bounces.${added.name} (TXT)`);
    // An MX to another host is named the same way; case and a trailing dot do not matter.
    dns.remove(`tern-bounces.${added.name}`);
    dns.mx(`tern-bounces.${added.name}`, 'mx.elsewhere.example');
    dns.txt(`tern-bounces.${added.name}`, SPF);
    const mx = (await domains.verify(tenant, added.id))!;
    expect(mx.reason).toBe(`another value: tern-bounces.${added.name} (MX)`);
    dns.mx(`tern-bounces.${added.name}`, `${BOUNCE_MX.toUpperCase()}.`, 20);
    expect((await domains.verify(tenant, added.id))!.status).toBe('verified');
  });

  it('gives up on a pending domain after 72 h with backoff in between; verify-now starts again', async () => {
    const domains = service();
    const created = now.getTime();
    const added = (await domains.add(tenant, nextId(), fresh())) as Domain;
    const dueAt = async () =>
      (
        await pool.query<{ next_check_at: Date | null }>(
          'SELECT next_check_at FROM sending_domains WHERE tenant_id = $1 AND id = $2',
          [tenant, added.id],
        )
      ).rows[0]!.next_check_at?.getTime() ?? null;
    expect(await dueAt()).toBe(created + 60_000);
    // Backoff: a quarter of the time spent pending, between 1 min and 1 h.
    const waits: number[] = [];
    for (let i = 0; i < 400; i++) {
      const due = await dueAt();
      if (due === null) break;
      now = new Date(due);
      await domains.runDue();
      const next = await dueAt();
      if (next !== null) waits.push(next - due);
    }
    expect(waits[0]).toBe(60_000);
    expect(Math.max(...waits)).toBe(HOUR);
    expect(waits.length).toBeGreaterThan(70);
    expect(waits.length).toBeLessThan(100);
    const d = (await domains.get(tenant, added.id))!;
    expect(d.status).toBe('failed');
    expect(now.getTime()).toBe(created + 72 * HOUR);
    expect(d.reason).toMatch(/^not verified within 72 h — not found: /);
    expect((await loggedEvents(added.id)).map((e) => e.type)).toEqual(['domain.failed']);

    // The owner publishes and asks: verified. Asked before publishing: pending again, a new window.
    const reopened = (await domains.verify(tenant, added.id))!;
    expect(reopened.status).toBe('pending');
    expect(await dueAt()).toBe(now.getTime() + 60_000);
    publish(added);
    expect((await domains.verify(tenant, added.id))!.status).toBe('verified');
    expect((await loggedEvents(added.id)).map((e) => e.id)).toEqual([
      `${added.id}:failed:1`,
      `${added.id}:verified:2`,
    ]);
  });

  it('never fails a domain while the DNS servers do not answer', async () => {
    const domains = service();
    const added = (await domains.add(tenant, nextId(), fresh())) as Domain;
    publish(added);
    expect((await domains.verify(tenant, added.id))!.status).toBe('verified');
    dns.fail();
    now = new Date(now.getTime() + 24 * HOUR);
    expect(await domains.runDue()).toBe(1);
    const d = (await domains.get(tenant, added.id))!;
    expect(d.status).toBe('verified');
    expect(d.records.map((r) => r.status).slice(0, 3)).toEqual(['verified', 'verified', 'verified']);
    expect(d.reason).toMatch(/^DNS did not answer for: /);
    // Asked again 5 minutes later, when the resolver is back.
    dns.healthy();
    now = new Date(now.getTime() + 5 * 60_000);
    expect(await domains.runDue()).toBe(1);
    expect((await domains.get(tenant, added.id))!).toMatchObject({ status: 'verified', reason: null });
    expect((await loggedEvents(added.id)).map((e) => e.type)).toEqual(['domain.verified']);
  });

  it('DMARC is verified by any DMARC record, its own or a parent domain’s, and never blocks', async () => {
    const domains = service();
    const parent = fresh();
    const added = (await domains.add(tenant, nextId(), `mail.${parent}`)) as Domain;
    publish(added);
    let d = (await domains.verify(tenant, added.id))!;
    expect(d.status).toBe('verified');
    expect(record(d, 'dmarc').status).toBe('pending');
    dns.txt(`_dmarc.${parent}`, 'v=DMARC1; p=reject; rua=mailto:d@example.test');
    d = (await domains.verify(tenant, added.id))!;
    expect(record(d, 'dmarc').status).toBe('verified');
  });

  it('one name per tenant (409); another tenant adds the same name with a key of its own', async () => {
    const domains = service();
    const name = fresh();
    const mine = (await domains.add(tenant, nextId(), name)) as Domain;
    expect(await domains.add(tenant, nextId(), name.toUpperCase())).toBe('exists');
    const theirs = (await domains.add(`${tenant}-other`, nextId(), `${name}.`)) as Domain;
    expect(theirs.name).toBe(name);
    expect(record(theirs, 'dkim').value).not.toBe(record(mine, 'dkim').value);
    // Its own selector (issue 40 item 11): both records can be published side by side.
    expect(record(theirs, 'dkim').name).not.toBe(record(mine, 'dkim').name);
    // Each verifies its own DKIM record: publishing mine verifies only mine.
    publish(mine);
    expect((await domains.verify(tenant, mine.id))!.status).toBe('verified');
    const other = (await domains.verify(`${tenant}-other`, theirs.id))!;
    expect(other.status).toBe('pending');
    expect(record(other, 'dkim').status).toBe('pending');
    publish(theirs);
    expect((await domains.verify(`${tenant}-other`, theirs.id))!.status).toBe('verified');
    expect((await domains.verify(tenant, mine.id))!.status).toBe('verified');
  });

  it('two checks at once save one outcome and append one event', async () => {
    const domains = service();
    const added = (await domains.add(tenant, nextId(), fresh())) as Domain;
    publish(added);
    const answers = await Promise.all([domains.verify(tenant, added.id), domains.verify(tenant, added.id)]);
    expect(answers.map((a) => a!.status)).toEqual(['verified', 'verified']);
    expect((await loggedEvents(added.id)).map((e) => e.id)).toEqual([`${added.id}:verified:1`]);
  });

  it('an event the log refused is appended by the next pass, once', async () => {
    let refuse = true;
    const stream = createEventStream(log);
    const flaky: EventStream = {
      ...stream,
      append: async (events) => {
        if (refuse) throw new Error('log unavailable');
        return stream.append(events);
      },
    };
    const domains = service({ log: flaky });
    const added = (await domains.add(tenant, nextId(), fresh())) as Domain;
    publish(added);
    expect((await domains.verify(tenant, added.id))!.status).toBe('verified');
    expect(await loggedEvents(added.id)).toEqual([]);
    refuse = false;
    await domains.runDue();
    await domains.runDue();
    expect((await loggedEvents(added.id)).map((e) => e.id)).toEqual([`${added.id}:verified:1`]);
  });
});
