// The inbound MX listener over a real socket (nodemailer's SMTP client → smtp-server), with real
// Postgres, the Postgres-table event log, the keyring, and the in-process DNS server (dns2) that
// mailauth resolves through (SPEC §24): who may deliver, what is stored and appended (sealed),
// 250 only once both are durable (451 otherwise), one message stored once however often it comes,
// the verdicts of a real DKIM signature, and replies threaded to what the tenant sent.
import { generateKeyPairSync } from 'node:crypto';
import { createEventStream, decodeBatch } from '@tern/event-log';
import { createSealer, type Keyring } from '@tern/privacy';
import nodemailer from 'nodemailer';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../test/support/dns-server.js';
import type { LogDatabase } from '../../../test/support/log-database.js';
import { closeInOrder } from '../../../test/support/services.js';
import {
  createInboundSweeper,
  getInbound,
  type InboundListener,
  type ReceivedMessage,
} from '../src/index.js';
import { createTestListener, INBOUND_DOMAIN, openListenerDb, withSmtpClient } from './listener-support.js';

const ENCRYPTION_KEY = 'inbound-test-encryption-key-0123456789abcdef';
const T1 = 'acme';

let db: LogDatabase;
let pool: pg.Pool;
let keyring: Keyring;
let dns: TestDnsServer;
let listener: InboundListener;
let port: number;
let logDown = false;
const received: ReceivedMessage[] = [];

async function deliver(to: string[], raw: string | Buffer, from = 'someone@sender.test') {
  return withSmtpClient(port, async (transport) => {
    try {
      const info = await transport.sendMail({ envelope: { from, to }, raw });
      return { ok: true as const, response: info.response };
    } catch (error) {
      const e = error as { responseCode?: number; response?: string; message: string };
      return { ok: false as const, code: e.responseCode, response: e.response ?? e.message };
    }
  });
}

const message = (opts: { id: string; subject?: string; from?: string; extra?: string[] }) =>
  [
    `From: Ann <${opts.from ?? 'ann@sender.test'}>`,
    `To: support@${T1}.${INBOUND_DOMAIN}`,
    `Subject: ${opts.subject ?? 'Hello there'}`,
    `Message-ID: <${opts.id}@sender.test>`,
    ...(opts.extra ?? []),
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'A body that only the tenant may read.',
    '',
  ].join('\r\n');

async function rows(): Promise<
  { id: string; raw: Buffer; in_reply_to: string | null; auth: Record<string, string> }[]
> {
  const r = await pool.query('SELECT id, raw, in_reply_to, auth FROM inbound_messages ORDER BY received_at');
  return r.rows;
}

async function logValues(): Promise<string[]> {
  const r = await pool.query<{ value: string }>(
    "SELECT value FROM event_log WHERE value LIKE '%email.received%' ORDER BY seq",
  );
  return r.rows.map((x) => x.value);
}

beforeAll(async () => {
  ({ db, pool, keyring } = await openListenerDb(T1, ENCRYPTION_KEY));
  dns = await startTestDnsServer();
  const stream = createEventStream(db.log, { sealer: createSealer(keyring) });
  listener = createTestListener(db, keyring, {
    log: {
      append: async (events) => {
        if (logDown) throw new Error('event log unavailable');
        await stream.append(events);
      },
    },
    resolve: (name, type) => dns.resolve(name, type),
    onReceived: (m) => {
      received.push(m);
    },
  });
  port = await listener.start();
}, 60_000);

afterAll(() => closeInOrder(listener, dns, db));

describe('who may deliver', () => {
  it('a tenant address under INBOUND_DOMAIN is taken; an unknown slug, another domain or a relay attempt is 550 5.1.1', async () => {
    const ok = await deliver([`support@${T1}.${INBOUND_DOMAIN}`], message({ id: 'who-1' }));
    expect(ok.ok).toBe(true);
    expect(ok.response).toMatch(/^250 .*inb_/);
    for (const to of [
      `x@nobody.${INBOUND_DOMAIN}`,
      'x@example.com',
      `x@a.${T1}.${INBOUND_DOMAIN}`,
      `x@${INBOUND_DOMAIN}`,
    ]) {
      const refused = await deliver([to], message({ id: `who-${to}` }));
      expect(refused, to).toMatchObject({ ok: false, code: 550 });
      expect(refused.response).toContain('5.1.1');
    }
  });

  it('over INBOUND_MAX_BYTES: 552, nothing stored', async () => {
    const before = (await rows()).length;
    const big = message({ id: 'big-1', extra: [`X-Pad: ${'a'.repeat(70 * 1024)}`] });
    const refused = await deliver([`support@${T1}.${INBOUND_DOMAIN}`], big);
    expect(refused).toMatchObject({ ok: false, code: 552 });
    expect((await rows()).length).toBe(before);
  });
});

describe('what is kept', () => {
  it('content sealed outside the log, email.received sealed in the log, opened for its consumers', async () => {
    const res = await deliver(
      [`support@${T1}.${INBOUND_DOMAIN}`],
      message({ id: 'seal-1', subject: 'Secret subject 42' }),
    );
    expect(res.ok).toBe(true);
    const id = /inb_[0-9a-z]+/.exec(res.response)![0];
    const { rows: r } = await pool.query('SELECT raw, content, summary FROM inbound_messages WHERE id = $1', [
      id,
    ]);
    for (const col of ['raw', 'content', 'summary'])
      expect((r[0][col] as Buffer).toString('latin1')).not.toContain('Secret subject 42');
    const values = await logValues();
    const mine = values.find((v) => v.includes(id))!;
    expect(mine).not.toContain('ann@sender.test');
    expect(mine).not.toContain('Secret subject 42');
    const batch = await decodeBatch(
      [{ key: id, value: mine, partition: 0, offset: '0' }],
      createSealer(keyring),
    );
    expect(batch.inboundEvents[0]).toMatchObject({
      id,
      type: 'email.received',
      tenantId: T1,
      data: {
        from: 'ann@sender.test',
        subject: 'Secret subject 42',
        to: [`support@${T1}.${INBOUND_DOMAIN}`],
      },
    });
    const stored = await getInbound(pool, T1, id, { raw: true });
    const raw = await keyring.openBytes(T1, id, 'raw', {
      rh: stored!.fromHash,
      p: stored!.period,
      ...stored!.raw!,
    });
    expect(raw!.toString()).toContain('A body that only the tenant may read.');
  });

  it('the same message again (an MTA retry) is stored once and answered with the first id', async () => {
    const raw = message({ id: 'dup-1' });
    const first = await deliver([`support@${T1}.${INBOUND_DOMAIN}`], raw);
    const second = await deliver([`support@${T1}.${INBOUND_DOMAIN}`], raw);
    expect(second.response).toBe(first.response);
    const { rows: r } = await pool.query(
      'SELECT count(*)::int AS n FROM inbound_messages WHERE dedup_key IN (SELECT dedup_key FROM inbound_messages WHERE id = $1)',
      [/inb_[0-9a-z]+/.exec(first.response)![0]],
    );
    expect(r[0].n).toBe(1);
  });

  it('log down: 451 and nothing announced; the retry stores nothing twice and appends the event once', async () => {
    logDown = true;
    const raw = message({ id: 'down-1', subject: 'while down' });
    const refused = await deliver([`support@${T1}.${INBOUND_DOMAIN}`], raw);
    expect(refused).toMatchObject({ ok: false, code: 451 });
    const { rows: pending } = await pool.query(
      'SELECT id, announced FROM inbound_messages WHERE NOT announced',
    );
    expect(pending).toHaveLength(1);
    logDown = false;
    const handed = received.length;
    const ok = await deliver([`support@${T1}.${INBOUND_DOMAIN}`], raw);
    expect(ok.response).toContain(pending[0].id);
    // The consumers never saw it (the first arrival failed before them): the retry hands it as fresh.
    expect(received.slice(handed).map((m) => [m.id, m.fresh])).toEqual([[pending[0].id, true]]);
    const { rows: after } = await pool.query(
      'SELECT count(*)::int AS n FROM inbound_messages WHERE id = $1 AND announced',
      [pending[0].id],
    );
    expect(after[0].n).toBe(1);
    expect((await logValues()).filter((v) => v.includes(pending[0].id))).toHaveLength(1);
  });
});

describe('verdicts and threads', () => {
  it('a real DKIM signature (nodemailer, a second key) passes; the same message altered fails; DMARC p=reject failing is recorded, not bounced', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const p = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    dns.txt('s1._domainkey.signer.test', `v=DKIM1; k=rsa; p=${p}`);
    dns.txt('signer.test', 'v=spf1 ip4:127.0.0.1 -all');
    dns.txt('_dmarc.signer.test', 'v=DMARC1; p=reject');
    const built = await nodemailer
      .createTransport({
        streamTransport: true,
        buffer: true,
        dkim: {
          domainName: 'signer.test',
          keySelector: 's1',
          privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        },
      })
      .sendMail({
        from: 'bob@signer.test',
        to: `support@${T1}.${INBOUND_DOMAIN}`,
        subject: 'signed',
        text: 'Signed body',
        messageId: '<signed-1@signer.test>',
      });
    const signed = built.message as Buffer;
    const pass = await deliver([`support@${T1}.${INBOUND_DOMAIN}`], signed, 'bob@signer.test');
    const passId = /inb_[0-9a-z]+/.exec(pass.response)![0];
    const altered = Buffer.from(signed.toString().replace('Signed body', 'Altered body'));
    const fail = await deliver([`support@${T1}.${INBOUND_DOMAIN}`], altered, 'bob@elsewhere.test');
    expect(fail.ok).toBe(true);
    const failId = /inb_[0-9a-z]+/.exec(fail.response)![0];
    const byId = new Map((await rows()).map((r) => [r.id, r]));
    expect(byId.get(passId)!.auth).toMatchObject({ dkim: 'pass', spf: 'pass', dmarc: 'pass' });
    expect(byId.get(failId)!.auth.dkim).not.toBe('pass');
    expect(byId.get(failId)!.auth.dmarc).toBe('fail');
  });

  it('In-Reply-To naming a Message-ID the tenant sent sets inReplyTo; another tenant’s does not', async () => {
    await pool.query(
      `INSERT INTO provider_messages (message_id, tenant_id, email_id, sent_at) VALUES
       ('sent-1@acme.test', $1, 'em_sent_1', now()), ('other-1@x.test', 'other', 'em_other_1', now())`,
      [T1],
    );
    const reply = await deliver(
      [`support@${T1}.${INBOUND_DOMAIN}`],
      message({
        id: 'reply-1',
        extra: ['In-Reply-To: <sent-1@acme.test>', 'References: <sent-1@acme.test>'],
      }),
    );
    const foreign = await deliver(
      [`support@${T1}.${INBOUND_DOMAIN}`],
      message({ id: 'reply-2', extra: ['In-Reply-To: <other-1@x.test>'] }),
    );
    const byId = new Map((await rows()).map((r) => [r.id, r]));
    expect(byId.get(/inb_[0-9a-z]+/.exec(reply.response)![0])!.in_reply_to).toBe('em_sent_1');
    expect(byId.get(/inb_[0-9a-z]+/.exec(foreign.response)![0])!.in_reply_to).toBeNull();
    expect(received.some((m) => m.inReplyTo === 'em_sent_1')).toBe(true);
  });
});

describe('stored, but its 250 never went out (SPEC §24: nothing orphaned, nothing stored twice)', () => {
  // A real fault of the real log: its table is away at the moment of the append (the row is in).
  const logTableAway = () => pool.query('ALTER TABLE event_log RENAME TO event_log_away');
  const logTableBack = () => pool.query('ALTER TABLE event_log_away RENAME TO event_log');
  const sweeper = () =>
    createInboundSweeper({
      pool,
      keyring,
      log: {
        append: (events) => createEventStream(db.log, { sealer: createSealer(keyring) }).append(events),
      },
      graceMs: 0,
      onReceived: (m) => {
        received.push(m);
      },
    });
  const unannounced = async () =>
    (
      await pool.query<{ id: string }>('SELECT id FROM inbound_messages WHERE NOT announced ORDER BY id')
    ).rows.map((r) => r.id);
  /** `raw` delivered while the log's table is away: 451, the row kept unannounced; its id. */
  const orphanedWhileLogAway = async (raw: string) => {
    await logTableAway();
    try {
      expect(await deliver([`support@${T1}.${INBOUND_DOMAIN}`], raw)).toMatchObject({ ok: false, code: 451 });
    } finally {
      await logTableBack();
    }
    const [orphan] = await unannounced();
    return orphan;
  };

  it('the log fails at the append: 451, the row kept unannounced; the sweeper appends its event once; a late retry stores nothing', async () => {
    const raw = message({ id: 'sweep-1', subject: 'never answered' });
    const orphan = await orphanedWhileLogAway(raw);
    expect(orphan).toMatch(/^inb_/);
    expect((await logValues()).filter((v) => v.includes(orphan!))).toHaveLength(0);

    // The log still down when the sweeper runs: the row is left as it is for the next run.
    await logTableAway();
    try {
      expect(await sweeper().runOnce()).toEqual({ announced: 0, removed: 0, failed: 1, orphanParts: 0 });
    } finally {
      await logTableBack();
    }
    expect(await unannounced()).toEqual([orphan]);

    // The MTA never retries (within the grace): the sweeper completes the row.
    const before = received.length;
    expect(await sweeper().runOnce()).toEqual({ announced: 1, removed: 0, failed: 0, orphanParts: 0 });
    expect(await unannounced()).toEqual([]);
    expect((await logValues()).filter((v) => v.includes(orphan!))).toHaveLength(1);
    expect(received.slice(before).map((m) => m.id)).toEqual([orphan]);
    expect(await sweeper().runOnce()).toEqual({ announced: 0, removed: 0, failed: 0, orphanParts: 0 });

    // The MTA's retry after all: the same id, no second row, no second event.
    const late = await deliver([`support@${T1}.${INBOUND_DOMAIN}`], raw);
    expect(late.response).toContain(orphan);
    const { rows: copies } = await pool.query(
      'SELECT count(*)::int AS n FROM inbound_messages WHERE dedup_key = (SELECT dedup_key FROM inbound_messages WHERE id = $1)',
      [orphan],
    );
    expect(copies[0].n).toBe(1);
    expect((await logValues()).filter((v) => v.includes(orphan!))).toHaveLength(1);
  });

  it('a retry later than the 24 h window completes the unannounced row instead of storing a second', async () => {
    const raw = message({ id: 'sweep-2', subject: 'retried late' });
    const orphan = await orphanedWhileLogAway(raw);
    await pool.query(
      "UPDATE inbound_messages SET received_at = received_at - interval '2 days' WHERE id = $1",
      [orphan],
    );
    const ok = await deliver([`support@${T1}.${INBOUND_DOMAIN}`], raw);
    expect(ok.response).toContain(orphan);
    expect(await unannounced()).toEqual([]);
    expect((await logValues()).filter((v) => v.includes(orphan!))).toHaveLength(1);
  });

  it('a row whose key is gone (the sender erased) is removed by the sweeper, not announced', async () => {
    const raw = message({ id: 'sweep-3', from: 'gone@sender.test' });
    const orphan = await orphanedWhileLogAway(raw);
    await keyring.eraseKeys(T1, 'gone@sender.test');
    expect(await sweeper().runOnce()).toEqual({ announced: 0, removed: 1, failed: 0, orphanParts: 0 });
    expect((await pool.query('SELECT 1 FROM inbound_messages WHERE id = $1', [orphan])).rowCount).toBe(0);
    expect((await logValues()).filter((v) => v.includes(orphan!))).toHaveLength(0);
  });
});
