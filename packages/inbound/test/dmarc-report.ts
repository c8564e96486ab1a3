// RFC 7489 aggregate reports for the tests, and real gzip/zip archives of them (node:zlib, yazl).
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { createGzip, gzipSync } from 'node:zlib';
import yazl from 'yazl';

export interface ReportRow {
  ip: string;
  count: number;
  disposition?: 'none' | 'quarantine' | 'reject';
  dkim?: 'pass' | 'fail';
  spf?: 'pass' | 'fail';
}

export function reportXml(opts: {
  domain: string;
  org?: string;
  reportId?: string;
  begin?: number;
  end?: number;
  rows: ReportRow[];
}): string {
  const begin = opts.begin ?? Math.floor(Date.now() / 1000) - 86_400;
  const end = opts.end ?? begin + 86_399;
  const rows = opts.rows
    .map(
      (r) => `  <record>
    <row>
      <source_ip>${r.ip}</source_ip>
      <count>${r.count}</count>
      <policy_evaluated>
        <disposition>${r.disposition ?? 'none'}</disposition>
        <dkim>${r.dkim ?? 'pass'}</dkim>
        <spf>${r.spf ?? 'pass'}</spf>
      </policy_evaluated>
    </row>
    <identifiers>
      <header_from>${opts.domain}</header_from>
    </identifiers>
    <auth_results>
      <dkim>
        <domain>${opts.domain}</domain>
        <result>${r.dkim ?? 'pass'}</result>
        <selector>tern1</selector>
      </dkim>
      <spf>
        <domain>bounce.${opts.domain}</domain>
        <result>${r.spf ?? 'pass'}</result>
      </spf>
    </auth_results>
  </record>`,
    )
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8" ?>
<feedback>
  <report_metadata>
    <org_name>${opts.org ?? 'google.com'}</org_name>
    <email>noreply-dmarc-support@google.com</email>
    <report_id>${opts.reportId ?? '12345678901234567890'}</report_id>
    <date_range>
      <begin>${begin}</begin>
      <end>${end}</end>
    </date_range>
  </report_metadata>
  <policy_published>
    <domain>${opts.domain}</domain>
    <adkim>r</adkim>
    <aspf>r</aspf>
    <p>none</p>
    <sp>none</sp>
    <pct>100</pct>
  </policy_published>
${rows}
</feedback>
`;
}

export const gzip = (xml: string): Buffer => gzipSync(Buffer.from(xml));

export function zip(entries: { name: string; data: Buffer | Readable }[]): Promise<Buffer> {
  const z = new yazl.ZipFile();
  for (const e of entries)
    if (Buffer.isBuffer(e.data)) z.addBuffer(e.data, e.name);
    else z.addReadStream(e.data, e.name);
  z.end();
  return buffer(z.outputStream);
}

/** `mib` MiB of zeros as a stream of one reused 1 MiB chunk: a bomb made without holding it. */
export function zeros(mib: number): Readable {
  const chunk = Buffer.alloc(1024 * 1024, 0x20);
  return Readable.from(
    (function* () {
      for (let i = 0; i < mib; i++) yield chunk;
    })(),
  );
}

/** A gzip bomb: `mib` MiB of spaces, compressed ~1000:1. */
export function gzipBomb(mib: number): Promise<Buffer> {
  return buffer(zeros(mib).pipe(createGzip({ level: 9 })));
}
