import { randomBytes } from 'node:crypto';

/** The attachment of every message: 3 KB of random bytes in base64 lines of 76. */
const attachment = randomBytes(3072)
  .toString('base64')
  .match(/.{1,76}/g)!
  .join('\r\n');

/**
 * The inbound bench's message (`bench/benches/inbound.ts`, `bench/experiments/parse-cpu.ts`):
 * ≈ 6 KB, a UTF-8 text part and a 3 KB attachment in base64; `tag` and `i` make its Message-ID.
 */
export const inboundMessage = (to: string, tag: string, i: number): string =>
  [
    'From: Ann <ann@sender.test>',
    `To: ${to}`,
    `Subject: Bench ${i}`,
    `Message-ID: <${tag}-${i}@sender.test>`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="B"',
    '',
    '--B',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `Hello ${i}, a line of text to read.`,
    '--B',
    'Content-Type: application/octet-stream; name="data.bin"',
    'Content-Disposition: attachment; filename="data.bin"',
    'Content-Transfer-Encoding: base64',
    '',
    attachment,
    '--B--',
    '',
  ].join('\r\n');
