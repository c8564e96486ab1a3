import { encodeTime } from 'ulid';

/**
 * The time part of an id made at `ms` (epoch milliseconds): a ULID's, 10 Crockford base32
 * characters, most significant first, digits and capitals only, so byte order and any locale's
 * order of two such parts are the order of their times (until the year 10889).
 *
 * Ids of rows that grow with traffic start with it (`em_<time><random>`): each new row lands at the
 * right edge of an index keyed by the id (within a tenant), where a random id would land on a
 * random leaf and write a full-page image of it at its first change after each checkpoint (issue
 * 45: 6–7 kB of WAL per index per email on a tenant with a million emails); and a range of ids is a
 * range of time.
 */
export function idTime(ms: number): string {
  return encodeTime(ms, 10);
}
