import type { DeliveryEvent } from '@tern/contracts';
import {
  type ConsumedRecord,
  createPostgresEventLog,
  decodeBatch,
  type EventStream,
  encodeEvents,
} from '@tern/event-log';
import { migratePostgres } from '@tern/stores';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPool, waitFor } from '../../../test/support/services.js';
import { createKeyring, createSealer, type Keyring, periodOf, sealedEventStream } from '../src/index.js';

const KEY = 'privacy-test-encryption-key-0123456789abcdef';
const queued = (over: Record<string, unknown> = {}, data: Record<string, unknown> = {}) =>
  ({
    id: 'em_1:queued',
    type: 'email.queued',
    tenantId: 't1',
    emailId: 'em_1',
    occurredAt: '2026-03-15T10:00:00.000Z',
    data: { toEmail: 'Ada@Example.com', subject: 'Hello Ada', tags: ['x'], ...data },
    ...over,
  }) as DeliveryEvent;

/** Records as a log hands them to a consumer. */
const consumed = (records: { key: string; value: string }[]): ConsumedRecord[] =>
  records.map((r, i) => ({ ...r, partition: 0, offset: String(i) }));

/** The events of `log` from its beginning (type and data) once there are `count`, no dead letter among them. */
async function readAll(log: EventStream, group: string, count: number) {
  const seen: Record<string, unknown>[] = [];
  const consumer = await log.consume({
    group,
    fromBeginning: true,
    handle: async ({ events, deadLetters }) => {
      expect(deadLetters).toEqual([]);
      for (const e of events) seen.push({ type: e.type, ...e.data });
    },
  });
  await waitFor(() => seen.length === count, { timeoutMs: 10_000 });
  await consumer.stop();
  return seen;
}

/** `pool`, recording the first three words of each statement into `statements`. */
function recordingPool(pool: pg.Pool, statements: string[]): pg.Pool {
  return new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === 'query')
        return (...args: Parameters<pg.Pool['query']>) => {
          statements.push(String(args[0]).trim().split(/\s+/).slice(0, 3).join(' '));
          return (target.query as (...a: unknown[]) => unknown).apply(target, args);
        };
      return Reflect.get(target, prop, receiver);
    },
  });
}

describe('keyring and sealing event log (real Postgres)', () => {
  const db = freshPool({ max: 8, prepare: migratePostgres });
  let keyring: Keyring;

  beforeAll(async () => {
    await db.open();
    keyring = createKeyring({ pool: db.pool, encryptionKey: KEY });
  });
  afterAll(db.close);

  /** A table log under the sealed stream over `keyring`. */
  const openSealedLog = async (table: string) => {
    const raw = createPostgresEventLog({ pool: db.pool, table });
    await raw.ensureSchema();
    return { raw, log: sealedEventStream(raw, keyring) };
  };

  it('refuses an ENCRYPTION_KEY under 32 bytes', () => {
    expect(() => createKeyring({ pool: db.pool, encryptionKey: 'x'.repeat(31) })).toThrow(
      /at least 32 bytes/,
    );
  });

  it('recipient hashes are keyed, per tenant, case-insensitive', () => {
    const other = createKeyring({ pool: db.pool, encryptionKey: `${KEY}-other` });
    expect(keyring.recipientHash('t1', 'Ada@Example.com ')).toBe(
      keyring.recipientHash('t1', 'ada@example.com'),
    );
    expect(keyring.recipientHash('t2', 'ada@example.com')).not.toBe(
      keyring.recipientHash('t1', 'ada@example.com'),
    );
    expect(other.recipientHash('t1', 'ada@example.com')).not.toBe(
      keyring.recipientHash('t1', 'ada@example.com'),
    );
  });

  it('seals an email.queued (no clear field left) and opens it back; other events pass untouched', async () => {
    const sealer = createSealer(keyring);
    const sent = {
      ...queued(),
      type: 'email.sent',
      data: { provider: 'p', messageId: 'm' },
    } as DeliveryEvent;
    const records = await encodeEvents([queued(), sent], sealer);
    // The clear values, not a 3-letter run a random ciphertext may hold (base64 has 'ADA' ~1 % of runs).
    expect(records[0]!.value).not.toMatch(/ada@example\.com|hello ada/i);
    const parsed = JSON.parse(records[0]!.value);
    expect(parsed.data).toMatchObject({ tags: ['x'], sealed: { v: 1, p: '2026-03' } });
    expect(parsed.data.toEmail).toBeUndefined();
    expect(records[1]!.value).toBe(JSON.stringify(sent));
    const garbage = { key: 'k', value: '{"type":"email.queued", not json' };
    const batch = await decodeBatch(consumed([...records, garbage]), sealer);
    expect(batch.events).toEqual([queued(), sent]);
    expect(batch.deadLetters).toEqual([{ payload: garbage.value, reason: 'value is not JSON' }]);
  });

  it('a sealed value moved to another email or tenant does not open (additional data binds them)', async () => {
    const [record] = await encodeEvents([queued()], createSealer(keyring));
    const sealed = JSON.parse(record!.value);
    expect(await keyring.open('t1', 'em_2', sealed.data.sealed)).toBeNull();
    expect(await keyring.open('t2', 'em_1', sealed.data.sealed)).toBeNull();
    expect(
      await keyring.open('t1', 'em_1', { ...sealed.data.sealed, tag: 'AAAAAAAAAAAAAAAAAAAAAA' }),
    ).toBeNull();
    expect(await keyring.open('t1', 'em_1', sealed.data.sealed)).toEqual({
      toEmail: 'Ada@Example.com',
      subject: 'Hello Ada',
    });
  });

  it('one key per (tenant, recipient, month), created once under concurrent seals', async () => {
    const fresh = createKeyring({ pool: db.pool, encryptionKey: KEY });
    const others = Array.from({ length: 5 }, () => createKeyring({ pool: db.pool, encryptionKey: KEY }));
    const at = new Date('2026-04-02T00:00:00Z');
    const all = await Promise.all(
      [fresh, ...others].map((k, i) =>
        k.seal('t1', `em_r${i}`, 'race@example.com', at, { toEmail: 'race@example.com' }),
      ),
    );
    const { rows } = await db.pool.query(
      'SELECT count(*)::int AS n FROM data_keys WHERE tenant_id = $1 AND recipient_hash = $2',
      ['t1', fresh.recipientHash('t1', 'race@example.com')],
    );
    expect(rows[0].n).toBe(1);
    // Whoever sealed, anyone opens: every racer ended with the stored key.
    for (const [i, s] of all.entries())
      expect(await keyring.open('t1', `em_r${i}`, s)).toEqual({ toEmail: 'race@example.com' });
  });

  it('a batch of new recipients gets its keys in one go, race-safe against another instance sealing the same batch', async () => {
    const events = Array.from({ length: 40 }, (_, i) =>
      queued({ id: `b${i}`, emailId: `em_b${i}` }, { toEmail: `batch${i % 20}@example.com` }),
    );
    const a = createSealer(createKeyring({ pool: db.pool, encryptionKey: KEY }));
    const b = createSealer(createKeyring({ pool: db.pool, encryptionKey: KEY }));
    const [sealedA, sealedB] = await Promise.all([encodeEvents(events, a), encodeEvents(events, b)]);
    const { rows } = await db.pool.query(
      "SELECT count(*)::int AS n FROM data_keys WHERE tenant_id = 't1' AND period = '2026-03' AND recipient_hash = ANY($1)",
      [Array.from({ length: 20 }, (_, i) => keyring.recipientHash('t1', `batch${i}@example.com`))],
    );
    expect(rows[0].n).toBe(20);
    const opened = await decodeBatch(consumed([...sealedA, ...sealedB]), createSealer(keyring));
    expect(opened.events).toEqual([...events, ...events]);
  });

  it('a batch with more recipients than the key cache holds is sealed in two statements and opened in one', async () => {
    // A pool that counts what it is asked: the batch paths must not fall back to a query per record.
    let statements = 0;
    const counting = new Proxy(db.pool, {
      get(target, prop, receiver) {
        if (prop === 'query')
          return (...args: Parameters<pg.Pool['query']>) => {
            statements++;
            return (target.query as (...a: unknown[]) => unknown).apply(target, args);
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    const small = createKeyring({ pool: counting, encryptionKey: KEY, cacheMax: 5 });
    const events = Array.from({ length: 30 }, (_, i) =>
      queued({ id: `c${i}`, emailId: `em_c${i}` }, { toEmail: `cache${i}@example.com`, subject: `S${i}` }),
    );
    const sealed = await encodeEvents(events, createSealer(small));
    expect(statements).toBeLessThanOrEqual(2);
    const reader = createKeyring({ pool: counting, encryptionKey: KEY, cacheMax: 5 });
    statements = 0;
    const opened = await decodeBatch(consumed(sealed), createSealer(reader));
    expect(statements).toBe(1);
    expect(opened.events).toEqual(events);
  });

  it('the parts of one email: the first records its key, the next seal under it with no statement; erasure reaches all of them', async () => {
    const statements: string[] = [];
    const counting = recordingPool(db.pool, statements);
    const ring = createKeyring({ pool: counting, encryptionKey: KEY });
    const at = new Date('2026-03-20T08:00:00Z');
    const parts = ['summary', 'content', 'raw'].map(
      (label) => [label, Buffer.from(`${label} of the message`)] as const,
    );
    const sealed = [];
    for (const [label, data] of parts)
      sealed.push(await ring.sealBytes('t1', 'inb_p1', 'Pat@example.com', at, label, data));
    // The key created, then the email's key recorded: two statements for three parts.
    expect(statements).toEqual(['INSERT INTO data_keys', 'INSERT INTO email_keys']);
    const { rows } = await db.pool.query(
      'SELECT recipient_hash, period FROM email_keys WHERE tenant_id = $1 AND email_id = $2',
      ['t1', 'inb_p1'],
    );
    expect(rows).toEqual([
      { recipient_hash: ring.recipientHash('t1', 'pat@example.com'), period: '2026-03' },
    ]);
    for (const [n, [label, data]] of parts.entries()) {
      expect(sealed[n]).toMatchObject({ rh: rows[0].recipient_hash, p: '2026-03' });
      expect(await keyring.openBytes('t1', 'inb_p1', label, sealed[n]!)).toEqual(data);
    }
    // Another recipient for the same email is not this email's recorded key: it is sealed under
    // its own, and the recorded one stays.
    const other = await ring.sealBytes('t1', 'inb_p1', 'quinn@example.com', at, 'extra', Buffer.from('x'));
    expect(other.rh).toBe(ring.recipientHash('t1', 'quinn@example.com'));
    expect(await keyring.openBytes('t1', 'inb_p1', 'extra', other)).toEqual(Buffer.from('x'));
    expect(await keyring.eraseKeys('t1', 'pat@example.com')).toBe(1);
    for (const [n, [label]] of parts.entries())
      expect(await keyring.openBytes('t1', 'inb_p1', label, sealed[n]!)).toBeNull();
  });

  it("a received message's parts (sealBytesForAddress): under the sender's key, recorded for no id; erasing the sender makes them unreadable", async () => {
    const statements: string[] = [];
    const counting = recordingPool(db.pool, statements);
    const ring = createKeyring({ pool: counting, encryptionKey: KEY });
    const at = new Date('2026-04-02T08:00:00Z');
    const parts = ['summary', 'content', 'raw'].map(
      (label) => [label, Buffer.from(`${label} of the received message`)] as const,
    );
    // The three parts at once: one key for all, each under its own IV and label.
    const sealed = await ring.sealBytesForAddress(
      't1',
      'inb_r1',
      'Rae@example.com',
      at,
      parts.map(([label, data]) => ({ label, data })),
    );
    expect(new Set(sealed.map((s) => s.iv.toString('hex'))).size).toBe(3);
    // The sender's key created once; nothing recorded for the inbound id.
    expect(statements).toEqual(['INSERT INTO data_keys']);
    const { rows } = await db.pool.query('SELECT 1 FROM email_keys WHERE tenant_id = $1 AND email_id = $2', [
      't1',
      'inb_r1',
    ]);
    expect(rows).toEqual([]);
    for (const [n, [label, data]] of parts.entries()) {
      expect(sealed[n]).toMatchObject({ rh: ring.recipientHash('t1', 'rae@example.com'), p: '2026-04' });
      expect(await keyring.openBytes('t1', 'inb_r1', label, sealed[n]!)).toEqual(data);
      // Bound to its id and label: not opened as another message's, nor as another part.
      expect(await keyring.openBytes('t1', 'inb_r2', label, sealed[n]!)).toBeNull();
    }
    expect(await keyring.openBytes('t1', 'inb_r1', 'content', sealed[0]!)).toBeNull();
    // A second message of the same sender and month: its key is cached, no statement.
    statements.length = 0;
    const [again] = await ring.sealBytesForAddress('t1', 'inb_r2', 'rae@example.com', at, [
      { label: 'summary', data: Buffer.from('y') },
    ]);
    expect(await keyring.openBytes('t1', 'inb_r2', 'summary', again!)).toEqual(Buffer.from('y'));
    expect(statements).toEqual([]);
    expect(await keyring.eraseKeys('t1', 'rae@example.com')).toBe(1);
    for (const [n, [label]] of parts.entries())
      expect(await keyring.openBytes('t1', 'inb_r1', label, sealed[n]!)).toBeNull();
  });

  it('erasing the keys makes every sealed copy unreadable, in this process at once and elsewhere after the cache TTL', async () => {
    const elsewhere = createKeyring({ pool: db.pool, encryptionKey: KEY, cacheTtlMs: 200 });
    const march = await keyring.seal('t1', 'em_e1', 'eve@example.com', new Date('2026-03-01T00:00:00Z'), {
      toEmail: 'eve@example.com',
    });
    const may = await keyring.seal('t1', 'em_e2', 'eve@example.com', new Date('2026-05-31T23:59:59Z'), {
      toEmail: 'eve@example.com',
    });
    expect(await elsewhere.open('t1', 'em_e1', march)).not.toBeNull();
    expect(await keyring.eraseKeys('t1', 'EVE@example.com')).toBe(2);
    expect(await keyring.open('t1', 'em_e1', march)).toBeNull();
    expect(await keyring.open('t1', 'em_e2', may)).toBeNull();
    await waitFor(async () => (await elsewhere.open('t1', 'em_e1', march)) === null, { timeoutMs: 2000 });
    // A new send after the erasure gets a new key; the old copies stay unreadable.
    const again = await keyring.seal('t1', 'em_e3', 'eve@example.com', new Date('2026-03-02T00:00:00Z'), {
      toEmail: 'eve@example.com',
    });
    expect(await keyring.open('t1', 'em_e3', again)).toEqual({ toEmail: 'eve@example.com' });
    expect(await keyring.open('t1', 'em_e1', march)).toBeNull();
  });

  it('retention drops whole months before the cut-off, per tenant or for all but the overriding ones', async () => {
    const seal = (tenant: string, month: string) =>
      keyring.seal(tenant, `em_${tenant}_${month}`, 'ret@example.com', new Date(`${month}-10T00:00:00Z`), {
        toEmail: 'x',
      });
    const jan = await seal('rt1', '2025-01');
    const feb = await seal('rt1', '2025-02');
    const febOther = await seal('rt2', '2025-02');
    // Cut-off inside February: January goes, February stays (some of it is still visible).
    expect(await keyring.dropPeriodsBefore(new Date('2025-02-20T00:00:00Z'), 'rt1')).toBe(1);
    expect(await keyring.open('rt1', 'em_rt1_2025-01', jan)).toBeNull();
    expect(await keyring.open('rt1', 'em_rt1_2025-02', feb)).not.toBeNull();
    expect(
      await keyring.dropPeriodsBefore(new Date('2025-03-01T00:00:00Z'), undefined, ['rt1']),
    ).toBeGreaterThanOrEqual(1);
    expect(await keyring.open('rt2', 'em_rt2_2025-02', febOther)).toBeNull();
    expect(await keyring.open('rt1', 'em_rt1_2025-02', feb)).not.toBeNull();
    expect(periodOf(new Date('2025-12-31T23:59:59.999Z'))).toBe('2025-12');
  });

  it('the sealed stream: the table holds no clear field, a consumer reads them opened, an erased one as null', async () => {
    const { raw, log } = await openSealedLog('privacy_log');
    await log.append([
      queued({ id: 'l1', emailId: 'em_l1' }, { toEmail: 'lia@example.com', subject: 'For Lia' }),
      queued({ id: 'l2', emailId: 'em_l2' }, { toEmail: 'max@example.com', subject: 'For Max' }),
    ]);
    const { rows } = await db.pool.query<{ value: string }>('SELECT value FROM privacy_log');
    // The clear values themselves: a case-insensitive fragment (`max`, `lia`) also matched random
    // base64url of the sealed fields now and then; `@` and a space never occur in base64url.
    const stored = rows.map((r) => r.value).join('\n');
    for (const clear of ['lia@example.com', 'max@example.com', 'For Lia', 'For Max'])
      expect(stored).not.toContain(clear);
    await keyring.eraseKeys('t1', 'lia@example.com');
    const seen: Record<string, unknown>[] = [];
    const consumer = await log.consume({
      group: 'privacy-test',
      fromBeginning: true,
      handle: async ({ events }) => {
        for (const e of events) seen.push(e.data);
      },
    });
    await waitFor(() => seen.length === 2, { timeoutMs: 10_000 });
    await consumer.stop();
    await raw.close();
    expect(seen).toEqual([
      { toEmail: null, subject: null, tags: ['x'] },
      { toEmail: 'max@example.com', subject: 'For Max', tags: ['x'] },
    ]);
  });

  it('every personal field of every event type is sealed under its email’s key: a diagnostic, a URL, a user agent; gone with the key; none kept for an unknown email', async () => {
    const { raw, log } = await openSealedLog('privacy_log_all');
    const at = (s: number) => `2026-03-15T10:00:${String(s).padStart(2, '0')}.000Z`;
    const ev = (id: string, emailId: string, type: string, s: number, data: Record<string, unknown>) =>
      ({ id, type, tenantId: 't1', emailId, occurredAt: at(s), data }) as DeliveryEvent;
    // One batch with the email.queued and its later events (sealed in that order); a later batch;
    // an event of an email Tern never saw queued.
    await log.append([
      queued({ id: 'z1:q', emailId: 'em_z1' }, { toEmail: 'zoe@example.com', subject: 'For Zoe' }),
      ev('z1:b', 'em_z1', 'email.bounced', 1, { bounceType: 'soft', reason: '552 <zoe@example.com> full' }),
    ]);
    await log.append([
      ev('z1:c', 'em_z1', 'email.clicked', 2, {
        url: 'https://a.test/?e=zoe@example.com',
        userAgent: 'ZoeUA',
      }),
      ev('z1:f', 'em_z1', 'email.failed', 3, { reason: '550 <zoe@example.com> unknown' }),
      ev('u1:c', 'em_unknown', 'email.clicked', 4, { url: 'https://a.test/?e=zed@example.com' }),
    ]);
    const { rows } = await db.pool.query<{ value: string }>('SELECT value FROM privacy_log_all');
    const table = rows.map((r) => r.value).join('\n');
    // The clear values themselves (see the test above: a short case-insensitive fragment also
    // matches random base64url now and then); a five-letter case-sensitive `ZoeUA` does not in practice.
    for (const clear of ['zoe@example.com', 'zed@example.com', 'ZoeUA', 'For Zoe'])
      expect(table).not.toContain(clear);
    expect(table.match(/"sealed"/g)).toHaveLength(4);
    const read = (group: string) => readAll(log, group, 5);
    expect(await read('privacy-all-1')).toEqual([
      { type: 'email.queued', toEmail: 'zoe@example.com', subject: 'For Zoe', tags: ['x'] },
      { type: 'email.bounced', bounceType: 'soft', reason: '552 <zoe@example.com> full' },
      { type: 'email.clicked', url: 'https://a.test/?e=zoe@example.com', userAgent: 'ZoeUA' },
      { type: 'email.failed', reason: '550 <zoe@example.com> unknown' },
      { type: 'email.clicked', url: '[erased]' },
    ]);
    await keyring.eraseKeys('t1', 'zoe@example.com');
    expect(await read('privacy-all-2')).toEqual([
      { type: 'email.queued', toEmail: null, subject: null, tags: ['x'] },
      { type: 'email.bounced', bounceType: 'soft' },
      { type: 'email.clicked', url: '[erased]' },
      { type: 'email.failed', reason: '[erased]' },
      { type: 'email.clicked', url: '[erased]' },
    ]);
    // After the erasure, a late event of that email keeps nothing either (no key is re-created).
    await log.append([ev('z1:o', 'em_z1', 'email.opened', 5, { userAgent: 'ZoeUA' })]);
    const { rows: after } = await db.pool.query<{ value: string }>(
      "SELECT value FROM privacy_log_all WHERE value LIKE '%z1:o%'",
    );
    expect(after[0]!.value).not.toContain('ZoeUA');
    await raw.close();
  });

  it('an outcome naming one recipient of several is sealed under THAT recipient’s key: erasing it erases the outcome, erasing the first `to` does not (SPEC §22)', async () => {
    const { raw, log } = await openSealedLog('privacy_log_multi');
    const at = (s: number) => `2026-03-15T11:00:${String(s).padStart(2, '0')}.000Z`;
    const ev = (id: string, type: string, s: number, data: Record<string, unknown>) =>
      ({ id, type, tenantId: 't1', emailId: 'em_m1', occurredAt: at(s), data }) as DeliveryEvent;
    await log.append([
      queued({ id: 'm1:q', emailId: 'em_m1' }, { toEmail: 'una@example.com', subject: 'For both' }),
      ev('m1:b', 'email.bounced', 1, {
        bounceType: 'hard',
        reason: '550 <duo@example.com> unknown',
        recipient: 'duo@example.com',
      }),
      ev('m1:d', 'email.delivered', 2, { recipient: 'una@example.com' }),
      ev('m1:f', 'email.delayed', 3, { reason: 'whole message' }),
    ]);
    const { rows } = await db.pool.query<{ value: string }>('SELECT value FROM privacy_log_multi');
    expect(rows.map((r) => r.value).join('\n')).not.toMatch(/una@|duo@|For both/);
    const read = (group: string) => readAll(log, group, 4);
    expect(await read('privacy-multi-1')).toEqual([
      { type: 'email.queued', toEmail: 'una@example.com', subject: 'For both', tags: ['x'] },
      {
        type: 'email.bounced',
        bounceType: 'hard',
        reason: '550 <duo@example.com> unknown',
        recipient: 'duo@example.com',
      },
      { type: 'email.delivered', recipient: 'una@example.com' },
      { type: 'email.delayed', reason: 'whole message' },
    ]);
    // Erasing the second recipient: its outcome still names SOME recipient, none in clear.
    await keyring.eraseKeys('t1', 'duo@example.com');
    expect(await read('privacy-multi-2')).toEqual([
      { type: 'email.queued', toEmail: 'una@example.com', subject: 'For both', tags: ['x'] },
      { type: 'email.bounced', bounceType: 'hard', recipient: '[erased]' },
      { type: 'email.delivered', recipient: 'una@example.com' },
      { type: 'email.delayed', reason: 'whole message' },
    ]);
    // Erasing the first `to`: the message's fields go, the other recipient's own outcome would stay.
    await keyring.eraseKeys('t1', 'una@example.com');
    expect(await read('privacy-multi-3')).toEqual([
      { type: 'email.queued', toEmail: null, subject: null, tags: ['x'] },
      { type: 'email.bounced', bounceType: 'hard', recipient: '[erased]' },
      { type: 'email.delivered', recipient: '[erased]' },
      { type: 'email.delayed' },
    ]);
    await raw.close();
  });
});
