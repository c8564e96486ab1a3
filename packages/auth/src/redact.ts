/**
 * pino `redact.paths` for credentials (SPEC §3: the clear key is never logged). Header names are
 * lower-case, as Node delivers them. Fastify's default serializers log no headers; these cover
 * code that logs `req` or a headers object anyway.
 */
export const REDACT_PATHS: readonly string[] = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
  'res.headers["set-cookie"]',
];

export const REDACT_CENSOR = '[REDACTED]';

/** pino options fragment: `pino({ redact: REDACT_OPTIONS })` or Fastify's `logger.redact`. */
export const REDACT_OPTIONS = { paths: [...REDACT_PATHS], censor: REDACT_CENSOR };

// The random part of a key; its first 7 characters stay visible, as in the listed prefix.
const API_KEY_IN_TEXT = /\b(tern_[A-Za-z0-9]{7})[A-Za-z0-9]+/g;
// JSON objects base64url-encode to `eyJ`: requiring it on header and payload avoids masking
// dotted names such as hostnames.
const JWT_IN_TEXT = /\beyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g;
// Whatever follows a Bearer scheme, e.g. the ingest token, which has no recognisable form.
const BEARER_IN_TEXT = /\b(Bearer)\s+[^\s"',;]+/gi;

/** Masks API keys, JWTs and bearer credentials in free text (error messages, stack traces). */
export function redactSecrets(text: string): string {
  return text
    .replace(BEARER_IN_TEXT, `$1 ${REDACT_CENSOR}`)
    .replace(JWT_IN_TEXT, REDACT_CENSOR)
    .replace(API_KEY_IN_TEXT, `$1${REDACT_CENSOR}`);
}

/** What an address in a logged URL is replaced with. */
export const ADDRESS_CENSOR = '[address]';
const HAS_ADDRESS = /@|%40/i;

/**
 * A request URL fit for a log line: every path segment and query value holding an email address
 * (`@`, or `%40` encoded) is replaced by `[address]` — `DELETE /suppressions/a%40b.test` logs
 * `/suppressions/[address]` (no personal datum in logs).
 */
export function redactAddressesInUrl(url: string): string {
  // Most URLs hold no address: logged as they are, without splitting them (every request's log line).
  if (!HAS_ADDRESS.test(url)) return url;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const redactedPath = path
    .split('/')
    .map((segment) => (HAS_ADDRESS.test(segment) ? ADDRESS_CENSOR : segment))
    .join('/');
  if (q === -1) return redactedPath;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (!HAS_ADDRESS.test(pair)) return pair;
      return eq === -1 ? ADDRESS_CENSOR : `${pair.slice(0, eq)}=${ADDRESS_CENSOR}`;
    })
    .join('&');
  return `${redactedPath}?${query}`;
}

/** The request of a log line (Fastify's default fields), its URL without addresses. */
export function requestLogFields(request: { method: string; url: string; host?: string; ip?: string }) {
  return {
    method: request.method,
    url: redactAddressesInUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
  };
}
