import { type KeyObject, sign as rsaSign } from 'node:crypto';
import type { MessageParserHeaderLine } from 'nodemailer/lib/dkim/message-parser';
import {
  dkimRelaxedBody,
  dkimSign,
  messageParser,
  mimeFuncs,
  nodemailerShared,
} from './nodemailer-module.js';

/** What a signature needs (nodemailer's `dkim` option as Tern gives it: relaxed/relaxed, rsa-sha256). */
export interface DkimSigning {
  domainName: string;
  keySelector: string;
  privateKey: KeyObject;
  /** Colon-separated header names to sign (`DKIM_SIGNED_HEADERS`); only those present go in `h=`. */
  headerFieldNames: string;
}

/**
 * A composed message with its `DKIM-Signature` first: the bytes nodemailer's own signer
 * (`nodemailer/lib/dkim`, 10.x) writes for the same message and key — the same header parser,
 * relaxed body hash and header canonicalisation (its modules), the same tags and folding — except
 * that the RSA signature is made in libuv's thread pool (`crypto.sign` with a callback), not on the
 * event loop. RSASSA-PKCS1-v1_5 is deterministic, so the signatures are equal byte for byte
 * (test/dkim-sign.unit.test.ts). One RSA-2048 signature is ≈ 0.37 ms of CPU here, a quarter of what
 * the sender's thread spends on an email (issue 45, item 1); in the pool it runs beside the thread.
 * As nodemailer's signer, a message without a header block or a key the signer refuses goes out
 * unsigned.
 */
export async function signDkim(raw: Buffer, dkim: DkimSigning): Promise<Buffer> {
  const parser = new (messageParser())();
  const body = new (dkimRelaxedBody())({ hashAlgo: 'sha256' });
  let headers: MessageParserHeaderLine[] | undefined;
  let bodyHash: string | undefined;
  parser.on('headers', (value: MessageParserHeaderLine[]) => {
    headers = value;
  });
  body.on('hash', (value: string) => {
    bodyHash = value;
  });
  await new Promise<void>((resolve, reject) => {
    parser.once('error', reject);
    body.once('error', reject);
    body.once('end', resolve);
    // Both pass the bytes through unchanged (the header block, then the body): only the headers
    // and the hash are read here, and the message stays `raw`.
    body.resume();
    parser.pipe(body);
    parser.end(raw);
  });
  if (headers === undefined || bodyHash === undefined) return raw;
  const field = await signatureField(headers, bodyHash, dkim);
  return field === null ? raw : Buffer.concat([Buffer.from(`${field}\r\n`), raw]);
}

/** nodemailer's `sign()` (dkim/sign.js) with the RSA step in the thread pool; null where it answers false. */
async function signatureField(
  headers: MessageParserHeaderLine[],
  bodyHash: string,
  dkim: DkimSigning,
): Promise<string | null> {
  const canonical = dkimSign().relaxedHeaders(headers, dkim.headerFieldNames);
  // A tag value without control characters, DEL, `;` or `=` (nodemailer's `cleanTagValue`).
  const clean = (value: string) =>
    [...value].filter((c) => c > '\x1f' && c !== '\x7f' && c !== ';' && c !== '=').join('');
  const tags = [
    'v=1',
    'a=rsa-sha256',
    'c=relaxed/relaxed',
    `d=${nodemailerShared().normalizeDomain(clean(dkim.domainName), false)}`,
    'q=dns/txt',
    `s=${clean(dkim.keySelector)}`,
    `bh=${bodyHash}`,
    `h=${clean(canonical.fieldNames)}`,
  ].join('; ');
  const header = `${mimeFuncs().foldLines(`DKIM-Signature: ${tags}`, 76)};\r\n b=`;
  const data = Buffer.from(`${canonical.headers}dkim-signature:${relaxedHeaderLine(header)}`, 'latin1');
  const signature = await new Promise<Buffer | null>((resolve) =>
    rsaSign('sha256', data, dkim.privateKey, (error, value) => resolve(error ? null : value)),
  );
  if (signature === null) return null;
  return (
    header +
    signature
      .toString('base64')
      .replace(/(^.{73}|.{75}(?!\r?\n|\r))/g, '$&\r\n ')
      .trim()
  );
}

/** RFC 6376 §3.4.2 relaxed header value, as nodemailer's `relaxedHeaderLine`. */
function relaxedHeaderLine(line: string): string {
  return line
    .slice(line.indexOf(':') + 1)
    .replace(/\r?\n/g, '')
    .replace(/[ \t]+/g, ' ')
    .replace(/^ | $/g, '');
}
