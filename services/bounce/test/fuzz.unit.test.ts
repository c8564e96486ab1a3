// No message stalls or crashes the reader (SPEC §21): random damage to real reports, random bytes,
// and hostile shapes (deep nesting, huge headers, endless boundaries), each read in bounded time.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readReport } from '../src/index.js';

const FIXTURES = ['rfc3464-multi.eml', 'rfc5965-abuse.eml', 'yahoo-fbl.eml', 'rfc3464-simple.eml'].map((n) =>
  readFileSync(new URL(`./fixtures/${n}`, import.meta.url)),
);

/** Reads a message; the time it took. */
async function read(raw: Buffer): Promise<number> {
  const started = performance.now();
  const { report } = await readReport(raw);
  expect(['dsn', 'arf', 'other']).toContain(report.kind);
  return performance.now() - started;
}

/** A damaged copy: bytes replaced, cut out or repeated at random places. */
const damaged = fc
  .tuple(
    fc.constantFrom(...FIXTURES),
    fc.array(
      fc.record({
        at: fc.nat(),
        op: fc.constantFrom('replace', 'delete', 'repeat', 'truncate'),
        bytes: fc.uint8Array({ minLength: 1, maxLength: 40 }),
        n: fc.integer({ min: 1, max: 200 }),
      }),
      { minLength: 1, maxLength: 8 },
    ),
  )
  .map(([base, edits]) => {
    let buf = Buffer.from(base);
    for (const e of edits) {
      const at = e.at % Math.max(1, buf.length);
      if (e.op === 'replace')
        buf = Buffer.concat([buf.subarray(0, at), Buffer.from(e.bytes), buf.subarray(at + e.bytes.length)]);
      else if (e.op === 'delete') buf = Buffer.concat([buf.subarray(0, at), buf.subarray(at + e.n)]);
      else if (e.op === 'repeat')
        buf = Buffer.concat([
          buf.subarray(0, at),
          Buffer.alloc(e.n * e.bytes.length).fill(Buffer.from(e.bytes)),
          buf.subarray(at),
        ]);
      else buf = buf.subarray(0, at);
    }
    return buf;
  });

describe('malformed MIME', () => {
  it('damaged DSNs and ARF reports: always read, never thrown, each within 2 s', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          damaged,
          fc.uint8Array({ maxLength: 4000 }).map((a) => Buffer.from(a)),
        ),
        async (raw) => {
          expect(await read(raw)).toBeLessThan(2_000);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('hostile shapes: 2 000 nested multiparts, a 1 MB header, 50 000 empty field groups, NULs', async () => {
    const nested =
      Array.from(
        { length: 2_000 },
        (_, i) => `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n`,
      ).join('') +
      'Content-Type: message/delivery-status\r\n\r\nFinal-Recipient: rfc822; a@b.c\r\nAction: failed\r\n';
    const hugeHeader = `Subject: ${'x'.repeat(1_000_000)}\r\n\r\nbody`;
    const groups =
      'Content-Type: multipart/report; report-type=delivery-status; boundary="q"\r\n\r\n--q\r\nContent-Type: message/delivery-status\r\n\r\n' +
      'Reporting-MTA: dns; x\r\n'.concat('\r\n\r\nAction: failed\r\n'.repeat(50_000)) +
      '--q--\r\n';
    const nuls = Buffer.concat([FIXTURES[0]!, Buffer.alloc(10_000)]);
    for (const raw of [Buffer.from(nested), Buffer.from(hugeHeader), Buffer.from(groups), nuls]) {
      expect(await read(raw)).toBeLessThan(5_000);
    }
  });
});
