import { describe, expect, it } from 'vitest';
import {
  attachmentsSchema,
  contentTypeOf,
  isBase64,
  MAX_MESSAGE_BYTES,
  messageBytes,
  sendEmailBodySchema,
} from '../src/index.js';

describe('attachments (SPEC §22)', () => {
  it('base64: the standard alphabet, padded, nothing else', () => {
    for (const ok of ['', 'QQ==', 'QUI=', 'QUJD', Buffer.from([0xfb, 0xff]).toString('base64')])
      expect(isBase64(ok)).toBe(true);
    for (const bad of ['Q', 'QQ=', 'QUJD\n', 'QU JD', '-_-_', 'QUJD====', '=QUJ'])
      expect(isBase64(bad)).toBe(false);
  });

  it('the message size counts base64 text and content, not the decoded bytes', () => {
    const content = 'A'.repeat(4000);
    expect(messageBytes({ subject: 'é', text: 'ab', attachments: [{ content }, { content: 'QQ==' }] })).toBe(
      2 + 2 + 4000 + 4,
    );
    expect(MAX_MESSAGE_BYTES).toBe(40 * 1024 * 1024);
  });

  it('the content type follows the extension, else octet-stream', () => {
    expect(contentTypeOf('Invoice.PDF')).toBe('application/pdf');
    expect(contentTypeOf('logo.png')).toBe('image/png');
    expect(contentTypeOf('README')).toBe('application/octet-stream');
    expect(contentTypeOf('archive.tar.gz')).toBe('application/octet-stream');
  });

  it('refuses a repeated content id, a path in the name, more than 100 files', () => {
    const file = { filename: 'a.png', content: 'QQ==' };
    expect(
      attachmentsSchema.safeParse([
        { ...file, contentId: 'x' },
        { ...file, contentId: 'x' },
      ]).success,
    ).toBe(false);
    expect(attachmentsSchema.safeParse([{ ...file, filename: '../etc/passwd' }]).success).toBe(false);
    expect(attachmentsSchema.safeParse(Array.from({ length: 101 }, () => file)).success).toBe(false);
    expect(attachmentsSchema.safeParse(Array.from({ length: 100 }, () => file)).success).toBe(true);
  });

  it('is part of the send body, optional', () => {
    const body = { from: 'a@acme.test', to: 'b@example.com', subject: 's', text: 't' };
    expect(sendEmailBodySchema.safeParse(body).success).toBe(true);
    expect(
      sendEmailBodySchema.safeParse({ ...body, attachments: [{ filename: 'a.txt', content: 'QQ==' }] })
        .success,
    ).toBe(true);
    expect(
      sendEmailBodySchema.safeParse({
        ...body,
        attachments: [{ filename: 'a.txt', content: 'QQ==', size: 1 }],
      }).success,
    ).toBe(false);
  });
});
