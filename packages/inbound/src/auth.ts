import { Resolver } from 'node:dns/promises';
import type { InboundAuth } from '@tern/contracts';
import { onFirstUse } from '@tern/kernel';
import { LRUCache } from 'lru-cache';
import { type RawMessage, rawMessageOf, rawStream } from './parse.js';

/**
 * mailauth (and its joi, x509 and BIMI parsers) is loaded with the first message to authenticate,
 * not with the process: it was ≈ 11 % of the CPU of a start of `npm start` (issue 45, item 6).
 */
const loadMailauth = onFirstUse(() => import('mailauth'));

/** How the verdicts were reached: the connection's facts (SPEC §24 keeps the client IP and HELO). */
export interface ArrivalFacts {
  clientIp: string;
  helo: string;
  /** MAIL FROM ('' for the null sender). */
  sender: string;
  /** The name this MX calls itself (mailauth's `mta`). */
  mta: string;
}

export type DnsResolve = (name: string, type: string) => Promise<unknown>;

/** How long an answer, or a name's absence, is reused by `dnsResolverOf`; and how many are kept. */
const DNS_CACHE_TTL_MS = 60_000;
const DNS_CACHE_ENTRIES = 10_000;

/**
 * A resolver for mailauth through DNS_SERVERS (`host:port` list), or the system's when none,
 * with its answers cached (`cachedResolve`): a sender's SPF and DMARC records are asked again
 * for every message it sends.
 */
export function dnsResolverOf(
  servers: readonly string[] | undefined,
  cache: { ttlMs?: number; entries?: number } = {},
): DnsResolve {
  const resolver = new Resolver({ timeout: 2_000, tries: 2 });
  if (servers && servers.length > 0) resolver.setServers([...servers]);
  return cachedResolve((name, type) => resolver.resolve(name, type as 'TXT'), cache);
}

/** NXDOMAIN and NODATA: answers about the name, reused like records. Anything else (a timeout, SERVFAIL) is asked again. */
const ANSWERED = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * `resolve` with each (name, type) answer kept for `ttlMs` (at most `entries` of them, the least
 * recently used dropped first), and one lookup for concurrent asks of the same name. Node's
 * resolver gives no TTL for TXT records, so the time is this fixed bound, as short as a DMARC or
 * SPF change is expected to take effect (a minute). Each caller gets its own copy of the answer.
 */
function cachedResolve(
  resolve: DnsResolve,
  { ttlMs = DNS_CACHE_TTL_MS, entries = DNS_CACHE_ENTRIES }: { ttlMs?: number; entries?: number } = {},
): DnsResolve {
  const answers = new LRUCache<string, Promise<unknown>>({ max: entries, ttl: ttlMs });
  return (name, type) => {
    const key = `${type} ${name.toLowerCase()}`;
    let answer = answers.get(key);
    if (answer === undefined) {
      const asked = resolve(name, type);
      answer = asked;
      answers.set(key, asked);
      asked.catch((error: { code?: string }) => {
        if (!ANSWERED.has(error?.code ?? '') && answers.peek(key) === asked) answers.delete(key);
      });
    }
    return answer.then((value) => structuredClone(value));
  };
}

const TEMPERROR: InboundAuth = { spf: 'temperror', dkim: 'temperror', dmarc: 'temperror', arc: 'temperror' };

/** The best DKIM verdict of the signatures (one passing signature is a pass), `none` when unsigned. */
function dkimVerdict(results: readonly { status: { result: string } }[]): string {
  if (results.length === 0) return 'none';
  if (results.some((r) => r.status.result === 'pass')) return 'pass';
  return results[0]!.status.result;
}

/** A header naming a signature mailauth verifies against the body (DKIM, ARC), in any case. */
const SIGNATURE_HEADER = /dkim-signature|arc-/i;

/**
 * What mailauth needs to read of a message: only its header block when no header names a DKIM or
 * ARC signature (most mail), else the whole message. Unsigned, mailauth reads the body for
 * nothing — it hashes a body only for a signature — and its verdicts come from the headers, the
 * envelope and DNS: the same answers from the header block alone, for 10–33 % less CPU on the
 * inbound bench's 6 KB message (bench/experiments/auth-cpu.ts). The block ends where mailauth's
 * parser ends it: at the first LF that follows an LF (alone or as CRLF), which must be in the
 * first chunk; else the whole message is read.
 */
export function authInput(raw: RawMessage): Buffer | RawMessage {
  const first = raw.chunks[0];
  if (first === undefined) return raw;
  const lf = first.indexOf('\n\n');
  const crlf = first.indexOf('\n\r\n');
  const end = Math.min(
    lf < 0 ? Number.POSITIVE_INFINITY : lf + 2,
    crlf < 0 ? Number.POSITIVE_INFINITY : crlf + 3,
  );
  if (end === Number.POSITIVE_INFINITY) return raw;
  const headers = first.subarray(0, end);
  return SIGNATURE_HEADER.test(headers.toString('latin1')) ? raw : headers;
}

/**
 * SPF, DKIM, DMARC and ARC of a message on arrival (mailauth; DNS through `resolve`). A verdict
 * that could not be reached in `timeoutMs` (a resolver that never answers) is `temperror`: the
 * message is stored all the same — a verdict never decides whether Tern keeps mail.
 */
export async function verdictsOf(
  raw: Buffer | RawMessage,
  facts: ArrivalFacts,
  resolve: DnsResolve,
  timeoutMs = 15_000,
): Promise<InboundAuth> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((ok) => {
    timer = setTimeout(() => ok(null), timeoutMs);
  });
  try {
    const { authenticate } = await loadMailauth();
    // A signed message is read from its chunks as a stream: mailauth hashes the body as it goes,
    // no copy of the message.
    const read = authInput(rawMessageOf(raw));
    const result = await Promise.race([
      authenticate(Buffer.isBuffer(read) ? read : rawStream(read), {
        ip: facts.clientIp,
        helo: facts.helo,
        sender: facts.sender,
        mta: facts.mta,
        resolver: resolve as never,
        disableBimi: true,
      }),
      timeout,
    ]);
    if (result === null) return TEMPERROR;
    return {
      spf: result.spf ? result.spf.status.result : 'none',
      dkim: dkimVerdict(result.dkim.results),
      dmarc: result.dmarc ? result.dmarc.status.result : 'none',
      arc: result.arc ? result.arc.status.result : 'none',
    };
  } catch {
    return TEMPERROR;
  } finally {
    clearTimeout(timer);
  }
}
