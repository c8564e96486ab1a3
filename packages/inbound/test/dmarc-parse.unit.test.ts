// The DMARC aggregate report parser (SPEC §26) on real archives made here: gzip by node:zlib, zip by
// yazl; bombs (gzip and zip, ~1000:1) refused quickly and within bounded memory; malformed XML, a
// DTD (entity expansion), several zip entries and an oversized attachment refused with a reason.
import { describe, expect, it } from 'vitest';
import {
  DMARC_LIMITS,
  DmarcRejected,
  looksLikeDmarcReport,
  parseDmarcReport,
  parseReportXml,
} from '../src/dmarc-parse.js';
import { gzip, gzipBomb, reportXml, zeros, zip } from './dmarc-report.js';

const XML = reportXml({
  domain: 'Example.COM',
  rows: [
    { ip: '192.0.2.10', count: 42 },
    { ip: '2001:db8::1', count: 3, disposition: 'quarantine', dkim: 'fail', spf: 'fail' },
  ],
});

async function refused(content: Buffer): Promise<string> {
  const error = await parseDmarcReport(content).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DmarcRejected);
  return (error as DmarcRejected).reason;
}

describe('parseDmarcReport', () => {
  it('reads plain XML: metadata, policy, each record with its alignment results', async () => {
    const report = await parseDmarcReport(Buffer.from(XML));
    expect(report.orgName).toBe('google.com');
    expect(report.reportId).toBe('12345678901234567890');
    expect(report.policy).toMatchObject({ domain: 'example.com', p: 'none', pct: 100, adkim: 'r' });
    expect(report.end.getTime() - report.begin.getTime()).toBe(86_399_000);
    expect(report.records).toEqual([
      {
        sourceIp: '192.0.2.10',
        count: 42,
        disposition: 'none',
        dkim: 'pass',
        spf: 'pass',
        headerFrom: 'example.com',
        authResults: {
          dkim: [{ domain: 'Example.COM', result: 'pass', selector: 'tern1' }],
          spf: [{ domain: 'bounce.Example.COM', result: 'pass' }],
        },
      },
      expect.objectContaining({
        sourceIp: '2001:db8::1',
        count: 3,
        disposition: 'quarantine',
        dkim: 'fail',
        spf: 'fail',
      }),
    ]);
  });

  it('reads the same report gzipped and zipped (one entry)', async () => {
    const plain = await parseDmarcReport(Buffer.from(XML));
    expect(await parseDmarcReport(gzip(XML))).toEqual(plain);
    expect(
      await parseDmarcReport(await zip([{ name: 'google.com!example.com!1!2.xml', data: Buffer.from(XML) }])),
    ).toEqual(plain);
  });

  it('refuses a gzip bomb (256 MiB of spaces, ~1000:1) within its first MiB, quickly and in bounded memory', async () => {
    const bomb = await gzipBomb(256);
    expect(bomb.length).toBeLessThan(DMARC_LIMITS.maxCompressedBytes);
    const rss = process.memoryUsage().rss;
    const started = performance.now();
    expect(await refused(bomb)).toMatch(/compression ratio over 200:1/);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(process.memoryUsage().rss - rss).toBeLessThan(64 * 1024 * 1024);
  });

  it('refuses a gzip that inflates past the XML cap even at a modest ratio', async () => {
    const limits = { ...DMARC_LIMITS, maxXmlBytes: 64 * 1024 };
    const error = await parseDmarcReport(gzip(XML.repeat(200)), limits).catch((e: unknown) => e);
    expect((error as DmarcRejected).reason).toBe('inflates past 65536 bytes');
  });

  it('refuses a zip bomb (256 MiB entry) from its declared sizes before inflating', async () => {
    const bomb = await zip([{ name: 'report.xml', data: zeros(256) }]);
    const started = performance.now();
    expect(await refused(bomb)).toMatch(/zip entry declares 268435456 bytes/);
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('refuses a zip under the size cap whose ratio is a bomb (declared)', async () => {
    const bomb = await zip([{ name: 'report.xml', data: zeros(10) }]);
    expect(await refused(bomb)).toMatch(/compression ratio over 200:1/);
  });

  it('refuses a zip bomb whose directory lies about its size (a tiny entry declared) while inflating it', async () => {
    const bomb = await zip([{ name: 'report.xml', data: zeros(64) }]);
    const central = bomb.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    bomb.writeUInt32LE(1000, central + 24); // uncompressed size: 1000 bytes (it is 64 MiB)
    const rss = process.memoryUsage().rss;
    const started = performance.now();
    expect(await refused(bomb)).toBe('zip entry inflates past the size it declares');
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(process.memoryUsage().rss - rss).toBeLessThan(64 * 1024 * 1024);
  });

  it('refuses a zip of more than one entry', async () => {
    const two = await zip([
      { name: 'a.xml', data: Buffer.from(XML) },
      { name: 'b.xml', data: Buffer.from(XML) },
    ]);
    expect(await refused(two)).toBe('zip of 2 entries (at most 1)');
  });

  it('refuses an attachment over the compressed cap without reading it', async () => {
    const big = Buffer.alloc(DMARC_LIMITS.maxCompressedBytes + 1, 0x20);
    expect(await refused(big)).toMatch(/over 5242880/);
  });

  it('refuses a truncated gzip and a corrupt zip', async () => {
    const gz = gzip(XML);
    expect(await refused(gz.subarray(0, gz.length - 20))).toMatch(/corrupt archive/);
    const z = await zip([{ name: 'a.xml', data: Buffer.from(XML) }]);
    expect(await refused(z.subarray(0, z.length - 30))).toMatch(/corrupt zip/);
  });

  it('refuses malformed XML, a DTD (billion laughs) and XML that is not a report', () => {
    const reason = (xml: string) => {
      try {
        parseReportXml(xml);
        return null;
      } catch (e) {
        return (e as DmarcRejected).reason;
      }
    };
    expect(reason('<feedback><report_metadata></feedback>')).toMatch(/^malformed XML/);
    expect(
      reason(
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><feedback>&lol2;</feedback>',
      ),
    ).toBe('XML with a DTD or entity declarations');
    expect(reason('<html><body>hi</body></html>')).toBe('no <feedback> element');
    expect(reason(XML.replace('<count>42</count>', '<count>many</count>'))).toMatch(
      /^not an aggregate report: record\.0\.row\.count/,
    );
  });
});

describe('looksLikeDmarcReport', () => {
  it('knows the RFC 7489 §7.2.1.1 file names, and report types under a "Report Domain:" subject', () => {
    const gz = { contentType: 'application/gzip' };
    expect(
      looksLikeDmarcReport({ ...gz, filename: 'google.com!example.com!1700000000!1700086399.xml.gz' }, null),
    ).toBe(true);
    expect(looksLikeDmarcReport({ ...gz, filename: 'x!example.com!1!2!abc.zip' }, null)).toBe(true);
    expect(
      looksLikeDmarcReport({ ...gz, filename: 'report.gz' }, 'Report Domain: example.com Submitter: x'),
    ).toBe(true);
    expect(looksLikeDmarcReport({ ...gz, filename: 'report.gz' }, 'Holiday photos')).toBe(false);
    expect(looksLikeDmarcReport({ contentType: 'image/png', filename: 'a.png' }, 'Report Domain: x')).toBe(
      false,
    );
  });
});
