// A large received message's raw MIME sealed in parts (docs/inbound.md, "Memory of a large
// message"; issue 43 item 5), over a real socket (nodemailer → smtp-server) into real Postgres and
// the Postgres-table event log, with parts of 16 KiB so a few hundred KB make many of them: the
// parts hold the exact bytes (read back by the API's reader), are sealed (no clear text, swapped or
// missing parts read as gone), a retry leaves no second set, a deleted message takes its parts,
// parts whose row never came are swept; a 300 KB attachment is not kept decoded, yet a forward
// still sends its bytes and a DMARC report over the cap is refused by its size.
import { randomBytes } from 'node:crypto';
import type { Keyring } from '@tern/privacy';
import MailComposer from 'nodemailer/lib/mail-composer';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogDatabase } from '../../../test/support/log-database.js';
import { closeInOrder } from '../../../test/support/services.js';
import {
  type CreateRouteBody,
  createDmarcConsumer,
  createInboundReader,
  createInboundSweeper,
  type DmarcOutcome,
  eraseInbound,
  type ForwardRequest,
  type InboundListener,
  insertRoute,
  type ReceivedMessage,
} from '../src/index.js';
import { attachmentKept } from '../src/parse.js';
import { writeRawParts } from '../src/raw-parts.js';
import { createTestListener, INBOUND_DOMAIN, openListenerDb, withSmtpClient } from './listener-support.js';

const ENCRYPTION_KEY = 'inbound-parts-encryption-key-0123456789abcdef';
const T1 = 'parts';
const TO = `support@${T1}.${INBOUND_DOMAIN}`;
const FORWARD_TO = `fwd@${T1}.${INBOUND_DOMAIN}`;
const PART = 16 * 1024;

let db: LogDatabase;
let pool: pg.Pool;
let keyring: Keyring;
let listener: InboundListener;
let port: number;
const received: ReceivedMessage[] = [];
const forwarded: ForwardRequest[] = [];
const dmarcOutcomes: DmarcOutcome[][] = [];

/** The tenant's one route, in `inbound_routes` (the store's round trip reads it with each arrival). */
const route: CreateRouteBody = {
  priority: 1,
  match: { recipient: FORWARD_TO },
  actions: [{ forward: 'ops@elsewhere.test' }],
};

/** A message of one attachment, composed once: the exact bytes sent (ending in CRLF). */
async function compose(opts: {
  id: string;
  to?: string;
  filename?: string;
  content: Buffer;
  subject?: string;
}) {
  const raw = await new MailComposer({
    from: 'Ann <ann@sender.test>',
    to: opts.to ?? TO,
    subject: opts.subject ?? 'A large one',
    messageId: `<${opts.id}@sender.test>`,
    text: 'See the attachment.',
    attachments: [{ filename: opts.filename ?? 'data.bin', content: opts.content }],
  })
    .compile()
    .build();
  return raw.subarray(raw.length - 2).toString() === '\r\n' ? raw : Buffer.concat([raw, Buffer.from('\r\n')]);
}

async function deliver(raw: Buffer, to = TO): Promise<string> {
  const info = await withSmtpClient(port, (t) =>
    t.sendMail({ envelope: { from: 'ann@sender.test', to: [to] }, raw }),
  );
  return /inb_[0-9a-z]+/.exec(info.response)![0];
}

const partsOf = async (id: string) =>
  (
    await pool.query<{ part: number; iv: Buffer; tag: Buffer; ct: Buffer }>(
      'SELECT part, iv, tag, ct FROM inbound_raw_parts WHERE inbound_id = $1 ORDER BY part',
      [id],
    )
  ).rows;

beforeAll(async () => {
  ({ db, pool, keyring } = await openListenerDb(T1, ENCRYPTION_KEY));
  await insertRoute(pool, T1, 'rt_fwd', route);
  const dmarc = createDmarcConsumer({ pool, logger: { info: () => {}, warn: () => {} } });
  listener = createTestListener(db, keyring, {
    maxBytes: 4 * 1024 * 1024,
    forward: async (f) => {
      forwarded.push(f);
    },
    rawPartBytes: PART,
    keepAttachmentBytes: 64 * 1024,
    onReceived: async (m) => {
      received.push(m);
      dmarcOutcomes.push(await dmarc(m));
    },
  });
  port = await listener.start();
}, 60_000);

afterAll(() => closeInOrder(listener, db));

describe('a large message in parts', () => {
  const attachment = randomBytes(300_000);
  let raw: Buffer;
  let id: string;

  it('is stored in sealed parts of the part size, and read back byte for byte', async () => {
    raw = await compose({ id: 'parts-1', content: attachment });
    id = await deliver(raw);
    const { rows } = await pool.query('SELECT size, raw_parts, raw FROM inbound_messages WHERE id = $1', [
      id,
    ]);
    expect(rows[0]).toMatchObject({ size: raw.length, raw_parts: Math.ceil(raw.length / PART) });
    expect((rows[0].raw as Buffer).length).toBe(0);
    const parts = await partsOf(id);
    expect(parts.map((p) => p.part)).toEqual([...Array(Math.ceil(raw.length / PART)).keys()]);
    const clearLine = raw.subarray(
      raw.indexOf('See the attachment.'),
      raw.indexOf('See the attachment.') + 19,
    );
    for (const p of parts) expect(p.ct.includes(clearLine)).toBe(false);
    expect(parts.some((p) => p.ct.includes(raw.subarray(PART, PART + 64)))).toBe(false);

    const reader = createInboundReader(pool, keyring);
    expect((await reader.raw(T1, id))!.equals(raw)).toBe(true);
    const att = await reader.attachment(T1, id, 'att_0');
    expect(att!.content.equals(attachment)).toBe(true);
    expect((await reader.get(T1, id))!.attachments).toMatchObject([{ filename: 'data.bin', size: 300_000 }]);
  });

  it('the consumers get the message without the attachment held decoded, and its bytes on demand', () => {
    const m = received.find((r) => r.id === id)!;
    const [a] = m.parsed.attachments;
    expect(a).toMatchObject({ filename: 'data.bin', size: 300_000 });
    expect(attachmentKept(a!)).toBe(false);
    expect(a!.content.length).toBe(0);
    expect(m.raw().equals(raw)).toBe(true);
    expect(m.parsed.text?.trim()).toBe('See the attachment.');
  });

  it('a retry of the same message answers the same id and leaves no second set of parts', async () => {
    expect(await deliver(raw)).toBe(id);
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM inbound_raw_parts');
    expect(rows[0]!.n).toBe(Math.ceil(raw.length / PART));
  });

  it('a part swapped or missing reads as gone, never as other bytes', async () => {
    const reader = createInboundReader(pool, keyring);
    const [p0, p1] = await partsOf(id);
    await pool.query(
      'UPDATE inbound_raw_parts SET iv = $2, tag = $3, ct = $4 WHERE inbound_id = $1 AND part = 0',
      [id, p1!.iv, p1!.tag, p1!.ct],
    );
    expect(await reader.raw(T1, id)).toBeNull();
    await pool.query(
      'UPDATE inbound_raw_parts SET iv = $2, tag = $3, ct = $4 WHERE inbound_id = $1 AND part = 0',
      [id, p0!.iv, p0!.tag, p0!.ct],
    );
    expect((await reader.raw(T1, id))!.equals(raw)).toBe(true);
    const last = Math.ceil(raw.length / PART) - 1;
    const { rows: gone } = await pool.query(
      'DELETE FROM inbound_raw_parts WHERE inbound_id = $1 AND part = $2 RETURNING iv, tag, ct',
      [id, last],
    );
    expect(await reader.raw(T1, id)).toBeNull();
    await pool.query(
      'INSERT INTO inbound_raw_parts (inbound_id, part, iv, tag, ct) VALUES ($1, $2, $3, $4, $5)',
      [id, last, gone[0].iv, gone[0].tag, gone[0].ct],
    );
    expect((await reader.raw(T1, id))!.equals(raw)).toBe(true);
  });

  it('erasing the sender deletes the message and its parts', async () => {
    const erased = await eraseInbound(pool, T1, keyring.recipientHash(T1, 'ann@sender.test'));
    expect(erased).toContain(id);
    expect(await partsOf(id)).toEqual([]);
  });
});

describe('around the parts', () => {
  it('parts whose row never came (a crash between the two) are deleted by the sweeper, no others', async () => {
    const kept = await deliver(await compose({ id: 'parts-2', content: randomBytes(40_000) }));
    const orphan = 'inb_orphan0000000000000000000';
    const message = await compose({ id: 'parts-3', content: randomBytes(40_000) });
    const n = await writeRawParts(
      pool,
      { chunks: [message], size: message.length },
      PART,
      (label, data) => keyring.sealBytes(T1, orphan, 'ann@sender.test', new Date(), label, data),
      orphan,
    );
    expect(n).toBe(Math.ceil(message.length / PART));
    // A second ahead: Postgres stamps a part in microseconds, a Date holds milliseconds, so a part
    // written in the sweeper's own millisecond would be after a cutoff of now (it failed so once).
    const sweeper = createInboundSweeper({
      pool,
      keyring,
      log: { append: async () => {} },
      graceMs: 0,
      now: () => new Date(Date.now() + 1_000),
    });
    expect(await sweeper.runOnce()).toMatchObject({ orphanParts: n, announced: 0 });
    expect(await partsOf(orphan)).toEqual([]);
    expect((await partsOf(kept)).length).toBeGreaterThan(1);
  });

  it('a forward route still sends the attachment it did not keep decoded', async () => {
    const content = randomBytes(200_000);
    const id = await deliver(await compose({ id: 'parts-4', to: FORWARD_TO, content }), FORWARD_TO);
    const f = forwarded.find((r) => r.inboundId === id)!;
    expect(f.to).toBe('ops@elsewhere.test');
    expect(f.attachments).toHaveLength(1);
    expect(f.attachments[0]!.content.equals(content)).toBe(true);
  });

  it('a DMARC report attachment over the cap is refused by its size, not parsed', async () => {
    const before = dmarcOutcomes.length;
    await deliver(
      await compose({
        id: 'parts-5',
        subject: 'Report Domain: sender.test',
        filename: 'google.com!sender.test!1700000000!1700086399.xml.gz',
        content: randomBytes(100_000),
      }),
    );
    expect(dmarcOutcomes.slice(before).flat()).toEqual([
      {
        attachment: 'google.com!sender.test!1700000000!1700086399.xml.gz',
        status: 'rejected',
        reason: expect.stringMatching(/^attachment of 100000 bytes was not kept/),
      },
    ]);
  });
});
