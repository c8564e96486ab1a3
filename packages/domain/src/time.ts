/** One UTC day in milliseconds. */
export const DAY_MS = 86_400_000;

/**
 * Epoch milliseconds of an ISO 8601 timestamp. Events may carry different offsets, so every
 * comparison goes through the instant, never the string. Throws on an unparsable value: the
 * fold is only fed validated events, and a NaN would silently break its order-independence.
 */
export function instant(iso: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError(`not an ISO 8601 timestamp: ${iso}`);
  return ms;
}

/** The canonical form every stored timestamp takes: UTC, millisecond precision, `Z`. */
export function normaliseTimestamp(iso: string): string {
  return new Date(instant(iso)).toISOString();
}

/** 00:00:00.000Z of the UTC day containing `at`. */
export function startOfDayUTC(at: Date): Date {
  return new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS);
}

/** `YYYY-MM-DD` of the UTC day containing the instant (epoch ms or ISO string). */
export function utcDay(at: number | string): string {
  const ms = typeof at === 'number' ? at : instant(at);
  return new Date(ms).toISOString().slice(0, 10);
}
