/**
 * What every store can hold (issue 9, item 1): ingest refuses the rest (`deliveryEventSchema`),
 * the projector writes a dead letter storable (`storableText`).
 */

/**
 * The range of `occurredAt` every store can hold: from 1970-01-01 (ClickHouse `Date` and
 * `DateTime` start there) to before 2149-06-06 (the end of ClickHouse `Date`), and never more
 * than a day ahead of the receiving clock (a clock that far off is a bug, not a fact).
 */
export const OCCURRED_AT_MIN_MS = Date.UTC(1970, 0, 1);
export const OCCURRED_AT_MAX_MS = Date.UTC(2149, 5, 6);
export const MAX_FUTURE_SKEW_MS = 24 * 3600 * 1000;

/**
 * Why no store could hold a string, or null: U+0000 (Postgres text and jsonb refuse it) and a
 * lone UTF-16 surrogate (not valid Unicode: Postgres jsonb refuses it, UTF-8 cannot encode it).
 */
/** A UTF-16 surrogate without its partner (matched without the `u` flag, code unit by code unit). */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function unstorableText(value: string): string | null {
  if (value.includes('\u0000')) return 'must not contain the control character U+0000';
  if (LONE_SURROGATE.test(value)) return 'must not contain a lone UTF-16 surrogate (invalid Unicode)';
  return null;
}

/** Text any store can hold: U+0000 written as its escape, lone surrogates replaced (a dead letter must never fail). */
export const storableText = (text: string): string =>
  text.replaceAll('\u0000', '\\u0000').replace(new RegExp(LONE_SURROGATE.source, 'g'), '\uFFFD');
