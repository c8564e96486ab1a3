// DMARC aggregate reports (RFC 7489 §7.2, appendix C) as they arrive attached to mail: plain XML,
// gzip or zip (one entry). Hostile input is refused with a reason before it costs memory: the
// compressed size, the uncompressed size (inflated as a stream and stopped at the cap, never
// inflated whole first), the entries of a zip, the compression ratio, and any DTD (no entity is
// ever expanded). SPEC §26; docs/inbound.md § "DMARC aggregate reports".

import { createGunzip } from 'node:zlib';
import { onFirstUse, requireOnFirstUse } from '@tern/kernel';
import type { Entry } from 'yauzl';
import { z } from 'zod';

// The XML and zip readers are loaded with the first report, not with the process (issue 45, item 6).
const fxp = requireOnFirstUse<typeof import('fast-xml-parser')>(import.meta.url, 'fast-xml-parser');
const yauzl = requireOnFirstUse<typeof import('yauzl')>(import.meta.url, 'yauzl');

export interface DmarcLimits {
  /** Bytes of the attachment as it arrives (compressed or not). */
  maxCompressedBytes: number;
  /** Bytes of XML once inflated. */
  maxXmlBytes: number;
  /** Inflated bytes per compressed byte, checked once the XML passes `ratioFloorBytes`. */
  maxRatio: number;
  /** Below this many inflated bytes the ratio is not checked (a tiny report compresses well). */
  ratioFloorBytes: number;
  /** Entries of a zip archive. */
  maxEntries: number;
  /** `<record>`s of one report. */
  maxRecords: number;
}

export const DMARC_LIMITS: DmarcLimits = {
  maxCompressedBytes: 5 * 1024 * 1024,
  maxXmlBytes: 20 * 1024 * 1024,
  maxRatio: 200,
  ratioFloorBytes: 1024 * 1024,
  maxEntries: 1,
  maxRecords: 100_000,
};

/** A report refused; `reason` says why, in words a person reads. */
export class DmarcRejected extends Error {
  constructor(readonly reason: string) {
    super(`DMARC report refused: ${reason}`);
    this.name = 'DmarcRejected';
  }
}

export interface DmarcRecord {
  sourceIp: string;
  count: number;
  disposition: 'none' | 'quarantine' | 'reject';
  /** DMARC-aligned DKIM and SPF results (policy_evaluated). */
  dkim: 'pass' | 'fail';
  spf: 'pass' | 'fail';
  headerFrom: string;
  /** Raw authentication results (auth_results): each DKIM and SPF check with its domain. */
  authResults: {
    dkim: { domain: string; result: string; selector?: string }[];
    spf: { domain: string; result: string }[];
  };
}

export interface DmarcReport {
  orgName: string;
  email: string | null;
  reportId: string;
  begin: Date;
  end: Date;
  policy: {
    domain: string;
    p: string | null;
    sp: string | null;
    pct: number | null;
    adkim: string | null;
    aspf: string | null;
  };
  records: DmarcRecord[];
}

const GZIP = [0x1f, 0x8b];
const ZIP = [0x50, 0x4b, 0x03, 0x04];
const startsWith = (buf: Buffer, magic: number[]) => magic.every((b, i) => buf[i] === b);

/** The report XML of an attachment, by its bytes (not its name): gzip, zip or XML. */
export async function reportXml(content: Buffer, limits: DmarcLimits = DMARC_LIMITS): Promise<string> {
  if (content.length > limits.maxCompressedBytes)
    throw new DmarcRejected(`attachment of ${content.length} bytes is over ${limits.maxCompressedBytes}`);
  if (startsWith(content, GZIP)) return (await gunzipCapped(content, limits)).toString('utf8');
  if (startsWith(content, ZIP)) return (await unzipOne(content, limits)).toString('utf8');
  if (content.length > limits.maxXmlBytes)
    throw new DmarcRejected(`XML of ${content.length} bytes is over ${limits.maxXmlBytes}`);
  return content.toString('utf8');
}

/** Counts inflated bytes; throws once past the size cap or the ratio cap. */
function inflationGuard(compressedSoFar: () => number, limits: DmarcLimits) {
  let total = 0;
  return (chunk: number): string | null => {
    total += chunk;
    const compressed = Math.max(compressedSoFar(), 1);
    if (total > limits.maxXmlBytes) return `inflates past ${limits.maxXmlBytes} bytes`;
    if (total > limits.ratioFloorBytes && total / compressed > limits.maxRatio)
      return `compression ratio over ${limits.maxRatio}:1 (${total} bytes from ${compressed})`;
    return null;
  };
}

function collectCapped(
  stream: NodeJS.ReadableStream & { destroy(): void },
  compressedSoFar: () => number,
  limits: DmarcLimits,
) {
  const guard = inflationGuard(compressedSoFar, limits);
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let done = false;
    const fail = (error: Error) => {
      if (done) return;
      done = true;
      stream.destroy();
      reject(error);
    };
    stream.on('data', (chunk: Buffer) => {
      if (done) return;
      const over = guard(chunk.length);
      if (over !== null) return fail(new DmarcRejected(over));
      chunks.push(chunk);
    });
    stream.on('error', (error: Error) =>
      fail(
        error instanceof DmarcRejected
          ? error
          : /too many bytes/.test(error.message)
            ? new DmarcRejected('zip entry inflates past the size it declares')
            : new DmarcRejected(`corrupt archive (${error.message})`),
      ),
    );
    stream.on('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks));
    });
  });
}

function gunzipCapped(content: Buffer, limits: DmarcLimits): Promise<Buffer> {
  const gunzip = createGunzip({ chunkSize: 64 * 1024 });
  // The ratio against the compressed bytes inflated so far: a bomb is caught within its first MiB.
  const out = collectCapped(gunzip, () => gunzip.bytesWritten, limits);
  gunzip.end(content);
  return out;
}

function unzipOne(content: Buffer, limits: DmarcLimits): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    yauzl().fromBuffer(content, { lazyEntries: true, validateEntrySizes: true }, (openError, zip) => {
      if (openError || !zip)
        return reject(new DmarcRejected(`corrupt zip (${openError?.message ?? 'unreadable'})`));
      if (zip.entryCount > limits.maxEntries) {
        zip.close();
        return reject(new DmarcRejected(`zip of ${zip.entryCount} entries (at most ${limits.maxEntries})`));
      }
      let settled = false;
      const settle = (error: Error | null, xml?: Buffer) => {
        if (settled) return;
        settled = true;
        zip.close();
        if (error) reject(error);
        else resolve(xml!);
      };
      zip.on('error', (error: Error) => settle(new DmarcRejected(`corrupt zip (${error.message})`)));
      zip.on('end', () => settle(new DmarcRejected('zip holds no XML entry')));
      zip.on('entry', (entry: Entry) => {
        if (entry.fileName.endsWith('/')) return zip.readEntry();
        if (entry.isEncrypted()) return settle(new DmarcRejected('zip entry is encrypted'));
        // The declared sizes first (cheap); the stream then holds them to the bytes it inflates.
        if (entry.uncompressedSize > limits.maxXmlBytes)
          return settle(
            new DmarcRejected(
              `zip entry declares ${entry.uncompressedSize} bytes (over ${limits.maxXmlBytes})`,
            ),
          );
        const compressed = Math.max(entry.compressedSize, 1);
        if (
          entry.uncompressedSize > limits.ratioFloorBytes &&
          entry.uncompressedSize / compressed > limits.maxRatio
        )
          return settle(new DmarcRejected(`compression ratio over ${limits.maxRatio}:1 (declared)`));
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream)
            return settle(new DmarcRejected(`corrupt zip entry (${streamError?.message})`));
          collectCapped(stream, () => compressed, limits).then(
            (xml) => settle(null, xml),
            (error: Error) => settle(error),
          );
        });
      });
      zip.readEntry();
    });
  });
}

const text = z.preprocess((v) => (typeof v === 'number' ? String(v) : v), z.string().trim().min(1));
const optText = z.preprocess(
  (v) => (v === undefined || v === '' ? null : typeof v === 'number' ? String(v) : v),
  z.string().trim().nullable(),
);
const word = (values: readonly string[]) =>
  z.preprocess(
    (v) => (typeof v === 'string' ? v.trim().toLowerCase() : v),
    z.enum(values as [string, ...string[]]),
  );
const int = z.preprocess(
  (v) => (typeof v === 'string' ? Number(v.trim()) : v),
  z.number().int().nonnegative(),
);
const epoch = int.transform((s) => new Date(s * 1000));

const recordSchema = z.object({
  row: z.object({
    source_ip: text,
    count: int,
    policy_evaluated: z.object({
      disposition: word(['none', 'quarantine', 'reject']),
      dkim: word(['pass', 'fail']),
      spf: word(['pass', 'fail']),
    }),
  }),
  identifiers: z.object({ header_from: text }),
  auth_results: z
    .object({
      dkim: z.array(z.object({ domain: text, result: text, selector: optText.optional() })).default([]),
      spf: z.array(z.object({ domain: text, result: text })).default([]),
    })
    .default({ dkim: [], spf: [] }),
});

const feedbackSchema = z.object({
  report_metadata: z.object({
    org_name: text,
    email: optText.optional(),
    report_id: text,
    date_range: z.object({ begin: epoch, end: epoch }),
  }),
  policy_published: z.object({
    domain: text,
    p: optText.optional(),
    sp: optText.optional(),
    pct: int.optional(),
    adkim: optText.optional(),
    aspf: optText.optional(),
  }),
  record: z.array(recordSchema).min(1),
});

const parser = onFirstUse(
  () =>
    new (fxp().XMLParser)({
      ignoreAttributes: true,
      parseTagValue: false,
      processEntities: false,
      ignoreDeclaration: true,
      trimValues: true,
      isArray: (name) => name === 'record' || name === 'dkim' || name === 'spf',
    }),
);

/** The report of RFC 7489 XML; malformed, DTD-bearing or incomplete XML → DmarcRejected. */
export function parseReportXml(xml: string, limits: DmarcLimits = DMARC_LIMITS): DmarcReport {
  // No DTD at all: entities (and their expansion, "billion laughs") never reach the parser.
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw new DmarcRejected('XML with a DTD or entity declarations');
  const valid = fxp().XMLValidator.validate(xml);
  if (valid !== true) throw new DmarcRejected(`malformed XML (${valid.err.msg}, line ${valid.err.line})`);
  const doc = parser().parse(xml) as { feedback?: { record?: unknown[] } };
  if (!doc.feedback || typeof doc.feedback !== 'object') throw new DmarcRejected('no <feedback> element');
  if (Array.isArray(doc.feedback.record) && doc.feedback.record.length > limits.maxRecords)
    throw new DmarcRejected(`over ${limits.maxRecords} records`);
  // policy_evaluated's own <dkim>/<spf> are words, not arrays: unwrap what isArray wrapped.
  for (const r of (doc.feedback.record ?? []) as { row?: { policy_evaluated?: Record<string, unknown> } }[]) {
    const pe = r?.row?.policy_evaluated;
    if (pe) for (const k of ['dkim', 'spf']) if (Array.isArray(pe[k])) pe[k] = (pe[k] as unknown[])[0];
  }
  const parsed = feedbackSchema.safeParse(doc.feedback);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new DmarcRejected(`not an aggregate report: ${issue.path.join('.')}: ${issue.message}`);
  }
  const f = parsed.data;
  const m = f.report_metadata;
  const p = f.policy_published;
  return {
    orgName: m.org_name,
    email: m.email ?? null,
    reportId: m.report_id,
    begin: m.date_range.begin,
    end: m.date_range.end,
    policy: {
      domain: p.domain.toLowerCase(),
      p: p.p ?? null,
      sp: p.sp ?? null,
      pct: p.pct ?? null,
      adkim: p.adkim ?? null,
      aspf: p.aspf ?? null,
    },
    records: f.record.map((r) => ({
      sourceIp: r.row.source_ip,
      count: r.row.count,
      disposition: r.row.policy_evaluated.disposition as DmarcRecord['disposition'],
      dkim: r.row.policy_evaluated.dkim as 'pass' | 'fail',
      spf: r.row.policy_evaluated.spf as 'pass' | 'fail',
      headerFrom: r.identifiers.header_from.toLowerCase(),
      authResults: {
        dkim: r.auth_results.dkim.map((d) => ({
          domain: d.domain,
          result: d.result,
          ...(d.selector ? { selector: d.selector } : {}),
        })),
        spf: r.auth_results.spf.map((s) => ({ domain: s.domain, result: s.result })),
      },
    })),
  };
}

/** An attachment (or plain body) → the report, or DmarcRejected. */
export async function parseDmarcReport(
  content: Buffer,
  limits: DmarcLimits = DMARC_LIMITS,
): Promise<DmarcReport> {
  return parseReportXml(await reportXml(content, limits), limits);
}

/**
 * RFC 7489 §7.2.1.1 file name: `receiver "!" policy-domain "!" begin "!" end [ "!" id ] "." ext`
 * with ext `xml`, `xml.gz`/`gz` or `zip`; or, whatever the name, a gzip/zip/XML content type on a
 * message whose subject is `Report Domain: …` (§7.2.1.1's subject).
 */
export function looksLikeDmarcReport(
  attachment: { filename?: string | undefined; contentType: string },
  subject: string | null,
): boolean {
  const name = attachment.filename ?? '';
  if (/^[^!]+![^!]+!\d+!\d+(![^.]*)?\.(xml|xml\.gz|gz|zip)$/i.test(name)) return true;
  const type = attachment.contentType.toLowerCase();
  const reportType = /(gzip|zip|xml)/.test(type);
  return reportType && /^\s*report domain:/i.test(subject ?? '');
}
