// How notices.ts reads the providers' loose JSON: typed fields, message ids, times, opens, clicks.
import { classifyOpen } from '@tern/auth';
import { normalizeMessageId } from '@tern/domain';
import type { Outcome } from './notice.js';

export type Json = Record<string, unknown>;
export const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};
/**
 * Text no store refuses (issue 40 item 11: a Postmark `Details` cut mid-emoji at 2 000 characters
 * held a lone surrogate, the event was refused and the bounce lost): a lone UTF-16 surrogate
 * becomes U+FFFD, U+0000 is dropped, as the providers' own text is quoted, never judged.
 */
export const storableText = (v: string): string =>
  v
    .replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD')
    .replaceAll('\u0000', '');
export const str = (v: unknown): string | undefined =>
  typeof v === 'string' && v !== '' ? storableText(v) || undefined : undefined;
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
/** At most `max` UTF-16 units, never ending inside a surrogate pair. */
export function clip(v: string | undefined, max: number): string | undefined {
  if (v === undefined || v.length <= max) return v;
  const code = v.charCodeAt(max - 1);
  return v.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}
/** Only the fields that have a value (the contract's optional fields are absent, never undefined). */
export function defined<T extends Record<string, unknown>>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out as T;
}
export const ids = (...values: unknown[]) => [
  ...new Set(
    values
      .map((v) => (typeof v === 'string' ? normalizeMessageId(v) : ''))
      .filter((v) => v !== '' && v.length <= 998),
  ),
];
/** A Unix time in seconds (number or numeric string) → ISO, or undefined. */
export function unixTime(v: unknown): string | undefined {
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) return undefined;
  return new Date(Math.round(n * 1000)).toISOString();
}
/** The enhanced status code (RFC 3463) at the start of a status or diagnostic, e.g. `5.1.1`. */
export const enhancedStatus = (v: string | undefined) =>
  v ? /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(v)?.[1] : undefined;

export function openOutcome(
  userAgent: string | undefined,
  ip: string | undefined,
  machineHint = false,
): Outcome {
  const ua = clip(userAgent, 1000);
  const machine = machineHint || classifyOpen({ userAgent: ua, ip }) === 'machine';
  return { type: 'email.opened', data: defined({ userAgent: ua, machine: machine ? true : undefined }) };
}

export function clickOutcome(url: string | undefined, userAgent: string | undefined): Outcome | null {
  if (url === undefined || !/^https?:\/\//i.test(url)) return null;
  return {
    type: 'email.clicked',
    data: defined({ url: url.slice(0, 4000), userAgent: clip(userAgent, 1000) }),
  };
}
