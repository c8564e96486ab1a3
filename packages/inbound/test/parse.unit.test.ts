// A received message read from its DATA chunks in place (docs/inbound.md, "Memory of a large
// message"): the body hash is the one computed over the whole Buffer however the chunks fall, and
// `parseForStore` answers what mailparser's `simpleParser` answers (through postal-mime for a small
// message of a common shape, mailparser's own steps otherwise), except the bytes of an attachment
// over the cap.
import { createHash, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import { describe, expect, it } from 'vitest';
import { attachmentKept, bodyHash, createRawCollector, type RawMessage } from '../src/parse.js';
import { parseSimple } from '../src/parse-simple.js';
import { parseForStore } from '../src/parse-store.js';

/** The body hash as it was computed over one Buffer (before the chunks). */
function wholeBodyHash(raw: Buffer): string {
  let at = raw.indexOf('\r\n\r\n');
  if (at < 0) at = raw.indexOf('\n\n');
  return createHash('sha256')
    .update(at < 0 ? raw : raw.subarray(at))
    .digest('hex');
}

/** `raw` cut at the given offsets. */
function split(raw: Buffer, cuts: readonly number[]): RawMessage {
  const at = [...new Set(cuts.map((c) => c % (raw.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const c of [...at, raw.length]) {
    chunks.push(raw.subarray(from, c));
    from = c;
  }
  return { chunks, size: raw.length };
}

describe('createRawCollector', () => {
  it('holds the bytes as they came, in a 64 KiB slab then 1 MiB ones, whatever the chunks', () => {
    const data = randomBytes(3 * 1024 * 1024 + 12_345);
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 1_500_000 }), { minLength: 1, maxLength: 30 }),
        (sizes) => {
          const raw = createRawCollector();
          let at = 0;
          for (const n of sizes) {
            if (at >= data.length) break;
            raw.push(data.subarray(at, at + n));
            at = Math.min(at + n, data.length);
          }
          const message = raw.message();
          expect(message.size).toBe(at);
          expect(raw.size).toBe(at);
          expect(Buffer.concat(message.chunks as Buffer[]).equals(data.subarray(0, at))).toBe(true);
          expect(message.chunks.slice(1, -1).every((c) => c.length === 1024 * 1024)).toBe(true);
          expect(message.chunks[0]!.length).toBeLessThanOrEqual(64 * 1024);
        },
      ),
      { numRuns: 60 },
    );
    const empty = createRawCollector();
    expect(empty.message()).toEqual({ chunks: [], size: 0 });
  });
});

describe('bodyHash over chunks', () => {
  it('equals the hash over the whole message for any cut, separators straddling chunks included', () => {
    const piece = fc.constantFrom('a', 'b', '\r', '\n', '\r\n', '\r\n\r\n', '\n\n', 'Header: x\r\n');
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 40 }),
        fc.array(fc.nat(400), { maxLength: 12 }),
        (pieces, cuts) => {
          const raw = Buffer.from(pieces.join(''));
          expect(bodyHash(split(raw, cuts))).toBe(wholeBodyHash(raw));
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('parseForStore', () => {
  it.each([
    ['by postal-mime', 'Plain words.'],
    ['by mailparser (HTML only, which parseSimple declines)', undefined],
  ])(
    'answers what simpleParser answers %s; an attachment over the cap keeps its size and checksum, not its bytes',
    async (_, text) => {
      const smallFile = randomBytes(3000);
      const bigFile = randomBytes(50_000);
      const raw = await new MailComposer({
        from: 'Ann <ann@sender.test>',
        to: 'Bob <bob@in.test>, carol@in.test',
        cc: 'dan@in.test',
        subject: 'Two files',
        messageId: '<two@sender.test>',
        inReplyTo: '<older@tern.test>',
        references: ['<oldest@tern.test>', '<older@tern.test>'],
        text,
        html: '<p>Some <b>words</b>.</p>',
        attachments: [
          { filename: 'small.bin', content: smallFile },
          { filename: 'big.bin', content: bigFile, contentType: 'application/octet-stream' },
        ],
      })
        .compile()
        .build();
      const options = { skipImageLinks: true, skipTextToHtml: true };
      const expected = await simpleParser(raw, options);
      const got = await parseForStore(split(raw, [17, 4000, 4001, 30_000]), 10_000);
      expect((await parseSimple({ chunks: [raw], size: raw.length })) !== null).toBe(text !== undefined);
      for (const key of [
        'subject',
        'messageId',
        'inReplyTo',
        'references',
        'text',
        'html',
        'from',
        'to',
        'cc',
      ] as const)
        expect(got[key], key).toEqual(expected[key]);
      expect(got.date).toEqual(expected.date);
      expect(got.headerLines).toEqual(expected.headerLines);
      expect([...got.headers.keys()]).toEqual([...expected.headers.keys()]);
      const meta = (a: (typeof got.attachments)[number]) => ({
        filename: a.filename,
        contentType: a.contentType,
        size: a.size,
        checksum: a.checksum,
        contentId: a.contentId,
      });
      expect(got.attachments.map(meta)).toEqual(expected.attachments.map(meta));
      expect(got.attachments.map(attachmentKept)).toEqual([true, false]);
      expect(got.attachments[0]!.content.equals(smallFile)).toBe(true);
      expect(got.attachments[1]!.content.length).toBe(0);
      expect(got.attachments[1]!.size).toBe(50_000);
      expect(expected.attachments[1]!.content.equals(bigFile)).toBe(true);
    },
  );

  it('a message without HTML has html false, as simpleParser says', async () => {
    const raw = Buffer.from('From: a@b.test\r\nSubject: x\r\n\r\nJust text.\r\n');
    const got = await parseForStore({ chunks: [raw], size: raw.length });
    expect(got.html).toBe(false);
    expect(got.html).toEqual((await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true })).html);
    expect(got.text?.trim()).toBe('Just text.');
  });
});
