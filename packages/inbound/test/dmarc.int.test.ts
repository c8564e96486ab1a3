// DMARC aggregate reports (SPEC §26) through the real MX listener (nodemailer's SMTP client →
// smtp-server) into real Postgres: a gzipped report mailed to the tenant's address is stored per
// domain and summed by source IP; the same report again counts once; a gzip bomb and malformed XML
// are accepted as mail (250) but recorded `rejected` with nothing of them stored; mail that is not
// a report is left alone; a report mailed while the log is down (451) is stored when the MTA retries.
import { createEventStream } from '@tern/event-log';
import { createSealer, type Keyring } from '@tern/privacy';
import MailComposer from 'nodemailer/lib/mail-composer';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../test/support/dns-server.js';
import type { LogDatabase } from '../../../test/support/log-database.js';
import { closeInOrder } from '../../../test/support/services.js';
import { createDmarcConsumer, type DmarcOutcome, dmarcSummary, type InboundListener } from '../src/index.js';
import { gzip, gzipBomb, reportXml } from './dmarc-report.js';
import { createTestListener, INBOUND_DOMAIN, openListenerDb, withSmtpClient } from './listener-support.js';

const T1 = 'acme';
const DOMAIN = 'example.com';
const TO = `dmarc@${T1}.${INBOUND_DOMAIN}`;

let db: LogDatabase;
let pool: pg.Pool;
let dns: TestDnsServer;
let listener: InboundListener;
let port: number;
const outcomes: DmarcOutcome[][] = [];
let logDown = false;

type Report = { subject: string; filename: string; content: Buffer; type?: string };
const reportMail = (opts: Report) => ({
  from: 'noreply-dmarc-support@google.com',
  to: TO,
  subject: opts.subject,
  text: 'This is an aggregate report from google.com.',
  attachments: [
    { filename: opts.filename, content: opts.content, contentType: opts.type ?? 'application/gzip' },
  ],
});

async function mail(opts: Report) {
  const info = await withSmtpClient(port, (transport) => transport.sendMail(reportMail(opts)));
  return info.response;
}

/** The same bytes each time (an MTA's retry): the SMTP reply's code, or its response. */
async function mailRaw(raw: Buffer): Promise<string | number | undefined> {
  return withSmtpClient(port, (transport) =>
    transport.sendMail({ envelope: { from: 'noreply-dmarc-support@google.com', to: [TO] }, raw }).then(
      (info) => info.response,
      (error: { responseCode?: number }) => error.responseCode,
    ),
  );
}

beforeAll(async () => {
  let keyring: Keyring;
  ({ db, pool, keyring } = await openListenerDb(T1, 'dmarc-test-encryption-key-0123456789abcdef'));
  dns = await startTestDnsServer();
  const dmarc = createDmarcConsumer({ pool, logger: { info: () => {}, warn: () => {} } });
  const stream = createEventStream(db.log, { sealer: createSealer(keyring) });
  listener = createTestListener(db, keyring, {
    log: {
      append: async (events) => {
        if (logDown) throw new Error('event log unavailable');
        await stream.append(events);
      },
    },
    resolve: (name, type) => dns.resolve(name, type),
    maxBytes: 10 * 1024 * 1024,
    onReceived: async (m) => {
      outcomes.push(await dmarc(m));
    },
  });
  port = await listener.start();
}, 60_000);

afterAll(() => closeInOrder(listener, dns, db));

const reports = async () =>
  (
    await pool.query<{ status: string; domain: string | null; reason: string | null }>(
      'SELECT status, domain, reason FROM dmarc_reports ORDER BY received_at, id',
    )
  ).rows;

describe('DMARC aggregate reports mailed to the MX listener', () => {
  it('a gzipped report is stored per domain and answered by source IP', async () => {
    const xml = reportXml({
      domain: DOMAIN,
      reportId: 'r-1',
      rows: [
        { ip: '192.0.2.10', count: 40 },
        { ip: '198.51.100.7', count: 5, disposition: 'quarantine', dkim: 'fail', spf: 'fail' },
        { ip: '192.0.2.10', count: 2, dkim: 'fail' },
      ],
    });
    const response = await mail({
      subject: `Report Domain: ${DOMAIN} Submitter: google.com Report-ID: r-1`,
      filename: `google.com!${DOMAIN}!1700000000!1700086399.xml.gz`,
      content: gzip(xml),
    });
    expect(response).toMatch(/^250 /);
    expect(outcomes.at(-1)).toEqual([
      { attachment: `google.com!${DOMAIN}!1700000000!1700086399.xml.gz`, status: 'stored', domain: DOMAIN },
    ]);
    const summary = await dmarcSummary(pool, T1, DOMAIN, 30);
    expect(summary).toMatchObject({ domain: DOMAIN, reports: 1, rejected: 0, messages: 47 });
    expect(
      summary.sources.map((s) => [s.sourceIp, s.count, s.dkim, s.spf, s.disposition, s.reporters]),
    ).toEqual([
      [
        '192.0.2.10',
        42,
        { pass: 40, fail: 2 },
        { pass: 42, fail: 0 },
        { none: 42, quarantine: 0, reject: 0 },
        ['google.com'],
      ],
      [
        '198.51.100.7',
        5,
        { pass: 0, fail: 5 },
        { pass: 0, fail: 5 },
        { none: 0, quarantine: 5, reject: 0 },
        ['google.com'],
      ],
    ]);
    // Another tenant and another domain see nothing.
    expect((await dmarcSummary(pool, 'other', DOMAIN, 30)).sources).toEqual([]);
    expect((await dmarcSummary(pool, T1, 'example.org', 30)).sources).toEqual([]);
  });

  it('the same report mailed again (a new message) counts once', async () => {
    const xml = reportXml({ domain: DOMAIN, reportId: 'r-1', rows: [{ ip: '192.0.2.10', count: 40 }] });
    await mail({
      subject: `Report Domain: ${DOMAIN} again`,
      filename: 'google.com!example.com!1!2.xml.gz',
      content: gzip(xml),
    });
    expect(outcomes.at(-1)?.[0]?.status).toBe('duplicate');
    expect((await dmarcSummary(pool, T1, DOMAIN, 30)).messages).toBe(47);
  });

  it('a gzip bomb and malformed XML are recorded rejected with their reason; nothing of them is stored', async () => {
    const before = (await pool.query('SELECT count(*)::int AS n FROM dmarc_records')).rows[0].n;
    const bomb = await gzipBomb(64);
    expect(
      await mail({
        subject: `Report Domain: ${DOMAIN}`,
        filename: 'evil!example.com!1!2.xml.gz',
        content: bomb,
      }),
    ).toMatch(/^250 /);
    await mail({
      subject: `Report Domain: ${DOMAIN}`,
      filename: 'evil!example.com!1!2.xml',
      content: Buffer.from('<feedback><record></feedback>'),
      type: 'text/xml',
    });
    const rejected = (await reports()).filter((r) => r.status === 'rejected');
    expect(rejected).toEqual([
      { status: 'rejected', domain: null, reason: expect.stringMatching(/^compression ratio over 200:1/) },
      { status: 'rejected', domain: null, reason: expect.stringMatching(/^malformed XML/) },
    ]);
    expect((await pool.query('SELECT count(*)::int AS n FROM dmarc_records')).rows[0].n).toBe(before);
    const summary = await dmarcSummary(pool, T1, DOMAIN, 30);
    expect(summary).toMatchObject({ reports: 1, rejected: 2, messages: 47 });
  });

  it('a report mailed while the log is down (451) is stored when the MTA retries', async () => {
    const domain = 'example.net';
    const raw = await new MailComposer(
      reportMail({
        subject: `Report Domain: ${domain} Submitter: google.com Report-ID: r-down`,
        filename: `google.com!${domain}!1700000000!1700086399.xml.gz`,
        content: gzip(reportXml({ domain, reportId: 'r-down', rows: [{ ip: '192.0.2.44', count: 3 }] })),
      }),
    )
      .compile()
      .build();
    logDown = true;
    try {
      expect(await mailRaw(raw)).toBe(451);
    } finally {
      logDown = false;
    }
    expect(await mailRaw(raw)).toMatch(/^250 /);
    expect(outcomes.at(-1)).toEqual([
      { attachment: `google.com!${domain}!1700000000!1700086399.xml.gz`, status: 'stored', domain },
    ]);
    expect(await dmarcSummary(pool, T1, domain, 30)).toMatchObject({ reports: 1, messages: 3 });
    // Once complete, a further retry hands the consumers nothing again.
    expect(await mailRaw(raw)).toMatch(/^250 /);
    expect(outcomes.at(-1)).toEqual([]);
    expect(await dmarcSummary(pool, T1, domain, 30)).toMatchObject({ reports: 1, messages: 3 });
  });

  it('the store fails at the announced mark, after the consumers ran (451): the retry runs them again, nothing recorded twice', async () => {
    const raw = await new MailComposer(
      reportMail({
        subject: `Report Domain: ${DOMAIN}`,
        filename: 'evil!example.com!3!4.xml',
        content: Buffer.from('<feedback><record></feedback>'),
        type: 'text/xml',
      }),
    )
      .compile()
      .build();
    // A real fault of the store at that moment: an UPDATE of the mark refused by a trigger.
    await pool.query(`CREATE FUNCTION refuse_mark() RETURNS trigger LANGUAGE plpgsql
                        AS $$ BEGIN RAISE EXCEPTION 'the store is failing'; END $$`);
    await pool.query(`CREATE TRIGGER refuse_mark BEFORE UPDATE OF announced ON inbound_messages
                        FOR EACH ROW EXECUTE FUNCTION refuse_mark()`);
    try {
      expect(await mailRaw(raw)).toBe(451);
    } finally {
      await pool.query('DROP TRIGGER refuse_mark ON inbound_messages; DROP FUNCTION refuse_mark()');
    }
    expect(outcomes.at(-1)).toEqual([
      { attachment: 'evil!example.com!3!4.xml', status: 'rejected', reason: expect.any(String) },
    ]);
    expect(await mailRaw(raw)).toMatch(/^250 /);
    expect(outcomes.at(-1)).toEqual([
      { attachment: 'evil!example.com!3!4.xml', status: 'rejected', reason: expect.any(String) },
    ]);
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM dmarc_reports WHERE attachment = 'evil!example.com!3!4.xml'`,
    );
    expect(rows[0].n).toBe(1);
  });

  it('mail without a report attachment is not touched', async () => {
    const count = (await reports()).length;
    await mail({ subject: 'Holiday photos', filename: 'photo.gz', content: gzip('not a report') });
    expect(outcomes.at(-1)).toEqual([]);
    expect((await reports()).length).toBe(count);
  });
});
