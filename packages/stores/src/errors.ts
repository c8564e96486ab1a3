/**
 * What a store's error means for whoever called it — the one classification every service uses
 * (the HTTP error handler, the projector, the jobs):
 *
 * - `unavailable`: the store cannot be reached or cannot serve now (connection refused or lost,
 *   shutdown, timeout, lock or serialisation conflict, out of resources). The same request may
 *   succeed later: answer 503, retry with backoff.
 * - `data`: the store refused the data itself (Postgres class 22 data exception or 23 integrity
 *   constraint, a ClickHouse parse/type/range error). Retrying the same data can never succeed:
 *   answer 400, dead-letter the event.
 *   One exception: a CHECK whose name ends `_partition_window` refusing a row (23514) is
 *   `unavailable` — it stands only while a partition is being made (packages/read-models,
 *   `ensureLogDays`), and the same row goes in once it is.
 * - `bug`: anything else (a syntax error, a missing column, a TypeError): answer 500, log it.
 */
export type StoreErrorClass = 'unavailable' | 'data' | 'bug';

/** Node's codes of a socket that cannot connect or was cut. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * Postgres SQLSTATEs worth a retry: class 08 (connection), 53 (insufficient resources), 57P0x
 * (admin/crash shutdown, cannot connect now), serialisation failure and deadlock (40001, 40P01),
 * lock not available (55P03), statement timeout (57014).
 */
const PG_UNAVAILABLE = /^(08|53|57P0)|^(40001|40P01|55P03|57014)$/;
/** How the name of a CHECK that stands only while a partition is made ends (see above). */
export const PARTITION_WINDOW_SUFFIX = '_partition_window';
/** Postgres SQLSTATE classes of refused data. */
const PG_DATA = /^2[23][0-9A-Z]{3}$/;

/**
 * ClickHouse error codes of a server that cannot serve now: timeouts (159, 209), network (210),
 * too many queries (202), memory (241), read-only table (242), too many parts (252), aborted
 * or cancelled (236, 394).
 */
const CLICKHOUSE_UNAVAILABLE = new Set(['159', '202', '209', '210', '236', '241', '242', '252', '394']);
/** ClickHouse error codes of data a retry cannot fix (parse, type, range). */
const CLICKHOUSE_DATA = new Set(['6', '26', '27', '38', '41', '53', '69', '70', '72', '117', '321']);

/** Messages of a lost or refused connection that carry no code (pg, PGlite's socket, HTTP clients). */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|connection timeout|socket hang up|not queryable|timeout exceeded when trying to connect|Timeout error/i;
const DATA_MESSAGE = /Cannot parse|CANNOT_PARSE|TYPE_MISMATCH|VALUE_IS_OUT_OF_RANGE/;

/** Errors that say "unavailable" by their class: the event log's own (packages/event-log). */
const UNAVAILABLE_NAMES = new Set(['EventLogUnavailableError']);

function classifyOne(error: unknown): StoreErrorClass | null {
  if (error === null || typeof error !== 'object') return null;
  const { code, message, name, constraint } = error as {
    code?: unknown;
    message?: unknown;
    name?: unknown;
    constraint?: unknown;
  };
  if (typeof name === 'string' && UNAVAILABLE_NAMES.has(name)) return 'unavailable';
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || CLICKHOUSE_UNAVAILABLE.has(code)) return 'unavailable';
    if (code.length === 5 && PG_UNAVAILABLE.test(code)) return 'unavailable';
    if (code === '23514' && typeof constraint === 'string' && constraint.endsWith(PARTITION_WINDOW_SUFFIX))
      return 'unavailable';
    if (PG_DATA.test(code) || CLICKHOUSE_DATA.has(code)) return 'data';
  }
  if (typeof message === 'string') {
    if (UNAVAILABLE_MESSAGE.test(message)) return 'unavailable';
    if (DATA_MESSAGE.test(message)) return 'data';
  }
  return null;
}

/**
 * Classifies an error of a store (or of anything that wraps one as its `cause`, up to five
 * levels): the first level that names a class decides.
 */
export function classifyStoreError(error: unknown): StoreErrorClass {
  let e: unknown = error;
  for (let depth = 0; depth < 5 && e !== null && e !== undefined; depth++) {
    const found = classifyOne(e);
    if (found !== null) return found;
    e = (e as { cause?: unknown }).cause;
  }
  return 'bug';
}

/** The store refused a value because of its characters (U+0000, invalid Unicode: 22P05, 22021). */
export const isUnstorableCharacterError = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '22P05' || code === '22021';
};
