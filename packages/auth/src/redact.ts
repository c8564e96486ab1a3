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

/**
 * A logged response without its cookies: what `res.headers["set-cookie"]` redacts, as a
 * serializer (a copy only when there is one to censor).
 */
export function responseLogFields(res: unknown): unknown {
  if (res === null || typeof res !== 'object') return res;
  const headers = (res as { headers?: unknown }).headers;
  if (headers === null || typeof headers !== 'object' || !('set-cookie' in headers)) return res;
  return { ...res, headers: { ...headers, 'set-cookie': REDACT_CENSOR } };
}

/**
 * What a logged store error quotes of the data it refused: Postgres's `detail` ("Failing row
 * contains (…)" of a CHECK, "Key (…)=(…)" of a unique key) can hold an address or a subject. A
 * write refused while a partition is made is retried and logged with its error (packages/stores,
 * `_partition_window`); its code and message stay, the row does not.
 */
const DATA_DETAIL_PATHS = ['err.detail'];

/**
 * Logger options of a Tern process (issue 45 item 5): `req` logged as `requestLogFields` (no
 * headers: a credential header cannot reach the line) and `res` as `responseLogFields` (its cookies
 * censored), so pino's redaction keeps only the paths under `headers`. It runs over the keys its
 * paths name, on every line that has them, and took ≈ 4 µs of each request line for `req` and
 * `res` (`npm run bench -- reads`, the profile in bench/README.md); a `headers` object logged as
 * such is still redacted by pino.
 */
export const PROCESS_LOG_OPTIONS = {
  redact: {
    paths: [...REDACT_PATHS.filter((p) => p.startsWith('headers')), ...DATA_DETAIL_PATHS],
    censor: REDACT_CENSOR,
  },
  serializers: { req: requestLogFields, res: responseLogFields },
};

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
