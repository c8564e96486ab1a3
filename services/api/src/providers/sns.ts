import { createVerify, X509Certificate } from 'node:crypto';
import { get } from 'node:https';
import { LRUCache } from 'lru-cache';

/**
 * Amazon SNS HTTP(S) messages (SPEC §21): the signature is checked against the certificate at
 * `SigningCertURL`, fetched over HTTPS only from `sns.<region>.amazonaws.com` (the region of the
 * message's `TopicArn`), so a forger cannot point Tern at a certificate of their own. Written here
 * rather than with `sns-payload-validator`, whose host rule and trust store are fixed: the tests
 * serve a generated certificate over HTTPS from a loopback host, which only `certHost` and `ca`
 * (never set from configuration) allow.
 */

export interface SnsMessage {
  Type: 'Notification' | 'SubscriptionConfirmation' | 'UnsubscribeConfirmation';
  MessageId: string;
  TopicArn: string;
  Message: string;
  Timestamp: string;
  SignatureVersion: string;
  Signature: string;
  SigningCertURL: string;
  Subject?: string;
  SubscribeURL?: string;
  Token?: string;
}

export interface SnsVerifierOptions {
  /** The host (`host[:port]`) a certificate or subscription URL of `region` may be on. Default `sns.<region>.amazonaws.com`. */
  certHost?: (region: string) => string;
  /** Extra trusted CA of those HTTPS fetches (tests only). */
  ca?: string | Buffer;
  /** Per fetch. Default 5 s. */
  timeoutMs?: number;
}

const SIGNED_FIELDS = {
  Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
  SubscriptionConfirmation: [
    'Message',
    'MessageId',
    'SubscribeURL',
    'Timestamp',
    'Token',
    'TopicArn',
    'Type',
  ],
  UnsubscribeConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
} as const;

const MAX_CERT_BYTES = 16 * 1024;

/** `arn:aws:sns:<region>:<account>:<name>` → region, or null. */
export function topicRegion(topicArn: string): string | null {
  const m = /^arn:aws(?:-[a-z]+)*:sns:([a-z0-9-]{1,32}):\d{12}:[A-Za-z0-9_.-]{1,256}$/.exec(topicArn);
  return m?.[1] ?? null;
}

/** The shape of an SNS message, or null (not one: the route answers 401). */
export function parseSnsMessage(raw: unknown): SnsMessage | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const m = raw as Record<string, unknown>;
  const str = (k: string) => typeof m[k] === 'string' && (m[k] as string).length <= 300_000;
  if (
    !['Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation'].includes(m.Type as string) ||
    ![
      'MessageId',
      'TopicArn',
      'Message',
      'Timestamp',
      'SignatureVersion',
      'Signature',
      'SigningCertURL',
    ].every(str)
  )
    return null;
  if (m.Subject !== undefined && !str('Subject')) return null;
  if (m.Type !== 'Notification' && !(str('SubscribeURL') && str('Token'))) return null;
  return m as unknown as SnsMessage;
}

/** The text SNS signs: `Name\nvalue\n` for each signed field present, in order. */
export function snsStringToSign(message: SnsMessage): string {
  let out = '';
  for (const field of SIGNED_FIELDS[message.Type]) {
    const value = (message as unknown as Record<string, string | undefined>)[field];
    if (value === undefined) continue;
    out += `${field}\n${value}\n`;
  }
  return out;
}

export interface SnsVerifier {
  /** True only for a message signed by a certificate from an allowed host, of a topic in `topics`. */
  verify(message: SnsMessage, topics: ReadonlySet<string>): Promise<boolean>;
  /** Confirms a subscription: GET its `SubscribeURL` (same host rule). */
  confirm(message: SnsMessage): Promise<void>;
}

export function createSnsVerifier(opts: SnsVerifierOptions = {}): SnsVerifier {
  const certHost = opts.certHost ?? ((region: string) => `sns.${region}.amazonaws.com`);
  const timeoutMs = opts.timeoutMs ?? 5000;
  // A few certificates in use at a time; a rotated one is fetched once more.
  const certs = new LRUCache<string, Promise<X509Certificate>>({ max: 32, ttl: 3_600_000 });

  /** An https URL on the region's host, or null. */
  function allowedUrl(raw: string, region: string, pem: boolean): URL | null {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return null;
    }
    if (url.protocol !== 'https:' || url.username !== '' || url.password !== '') return null;
    if (url.host.toLowerCase() !== certHost(region).toLowerCase()) return null;
    if (pem && !url.pathname.endsWith('.pem')) return null;
    return url;
  }

  function fetchText(url: URL, limit: number): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = get(url, { timeout: timeoutMs, ...(opts.ca ? { ca: opts.ca } : {}) }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > limit) req.destroy(new Error('answer too large'));
          else chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', reject);
    });
  }

  function certificate(url: URL): Promise<X509Certificate> {
    const key = url.toString();
    let pending = certs.get(key);
    if (!pending) {
      pending = fetchText(url, MAX_CERT_BYTES).then(({ status, body }) => {
        if (status !== 200) throw new Error(`certificate answer ${status}`);
        return new X509Certificate(body);
      });
      // A failed fetch is not kept: the next message tries again.
      pending.catch(() => certs.delete(key));
      certs.set(key, pending);
    }
    return pending;
  }

  return {
    async verify(message, topics) {
      if (!topics.has(message.TopicArn)) return false;
      const region = topicRegion(message.TopicArn);
      if (region === null) return false;
      const url = allowedUrl(message.SigningCertURL, region, true);
      if (url === null) return false;
      const algorithm =
        message.SignatureVersion === '1'
          ? 'RSA-SHA1'
          : message.SignatureVersion === '2'
            ? 'RSA-SHA256'
            : null;
      if (algorithm === null) return false;
      let cert: X509Certificate;
      try {
        cert = await certificate(url);
      } catch {
        return false;
      }
      const now = Date.now();
      if (now < Date.parse(cert.validFrom) || now > Date.parse(cert.validTo)) return false;
      try {
        return createVerify(algorithm)
          .update(snsStringToSign(message), 'utf8')
          .verify(cert.publicKey, message.Signature, 'base64');
      } catch {
        return false;
      }
    },
    async confirm(message) {
      const region = topicRegion(message.TopicArn);
      const url = region === null ? null : allowedUrl(message.SubscribeURL ?? '', region, false);
      if (url === null) throw new Error('SubscribeURL is not on the topic region’s SNS host');
      const { status } = await fetchText(url, 64 * 1024);
      if (status !== 200) throw new Error(`SubscribeURL answered ${status}`);
    },
  };
}
