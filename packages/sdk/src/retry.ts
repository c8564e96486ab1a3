/** Pure parts of the retry policy, kept apart so they are tested without any I/O. */

export interface BackoffPolicy {
  /** First back-off ceiling; doubles per retry. */
  baseDelayMs: number;
  /** Ceiling of any wait, back-off or `Retry-After`. */
  maxDelayMs: number;
}

/**
 * Exponential back-off with full jitter (AWS architecture blog, "Exponential Backoff And
 * Jitter"): a uniform wait in [0, min(max, base · 2^retry)). Full jitter spreads clients that
 * failed together, so they do not retry in lockstep. `retry` is 0 for the first retry.
 */
export function backoffDelayMs(retry: number, policy: BackoffPolicy, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry));
  return Math.floor(random() * ceiling);
}

/**
 * `Retry-After` (RFC 9110 §10.2.3): either delay-seconds or an HTTP date. Returns ms from `nowMs`,
 * never negative; undefined when absent or unreadable (the caller then falls back to back-off).
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value == null) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Only a date is accepted besides digits: `Date.parse` would also take "1.5" or "-1".
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** Which HTTP answers are worth another attempt: rate limiting and server errors, never other 4xx. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

/** The wait before retry number `retry` (0-based): the server's `Retry-After` wins, capped. */
export function retryDelayMs(
  retry: number,
  retryAfterMs: number | undefined,
  policy: BackoffPolicy,
  random: () => number,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, policy.maxDelayMs);
  return backoffDelayMs(retry, policy, random);
}
