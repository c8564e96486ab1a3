import { DAY_MS } from './time.js';

/**
 * Local days of an IANA time zone (SPEC §26): the days and hours of the analytics breakdowns are
 * the tenant's. Intl-based (no table of our own), exact across daylight-saving changes.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** The offset of `timeZone` from UTC at instant `ms`, in ms (Paris in summer: +7 200 000). */
export function zoneOffsetMs(ms: number, timeZone: string): number {
  const parts = Object.fromEntries(
    formatter(timeZone)
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  const asUtc = Date.UTC(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/** The local date (`YYYY-MM-DD`) of instant `ms` in `timeZone`. */
export function localDay(ms: number, timeZone: string): string {
  return new Date(ms + zoneOffsetMs(ms, timeZone)).toISOString().slice(0, 10);
}

/** `day` (`YYYY-MM-DD`) plus `n` days. */
export function addDays(day: string, n: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);
}

/** The instant local midnight starts `day` in `timeZone` (the first instant of that local date). */
export function localMidnight(day: string, timeZone: string): number {
  const utc = Date.parse(`${day}T00:00:00Z`);
  let guess = utc - zoneOffsetMs(utc, timeZone);
  guess = utc - zoneOffsetMs(guess, timeZone);
  // A zone whose clocks skip midnight (a DST change at 00:00) starts the day later.
  while (localDay(guess, timeZone) < day) guess += 15 * 60_000;
  while (localDay(guess - 15 * 60_000, timeZone) === day) guess -= 15 * 60_000;
  return guess;
}
