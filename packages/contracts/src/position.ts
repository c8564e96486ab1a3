import { ID_PATTERN } from './ids.js';

/**
 * Read-your-writes (SPEC §25, issue 49 item 5). A write's `position` names the last event it put
 * on each partition of the event log, partitions ascending, joined by `,`. Each partition is
 * folded in order (a later record is projected only once every earlier one of its partition is),
 * so once these events are in the read models every event of the write is. A write of one event,
 * or any write on the Postgres-table log (one partition), answers one id: its last event's.
 */
export const POSITION_SEPARATOR = ',';

/** Most event ids a position may list: one per partition of the log a write touched (≤ its events). */
export const MAX_POSITION_IDS = 1000;

/** The position of a write whose last events per partition are `ids` (partitions ascending). */
export const formatPosition = (ids: readonly string[]): string => ids.join(POSITION_SEPARATOR);

/**
 * The event ids of a position (`,`-separated, spaces around each allowed, as an HTTP list
 * header joins repeated values), or null when it is not one a write answers.
 */
export function parsePosition(raw: string): string[] | null {
  const ids = raw.split(POSITION_SEPARATOR).map((id) => id.trim());
  if (ids.length > MAX_POSITION_IDS || !ids.every((id) => ID_PATTERN.test(id))) return null;
  return [...new Set(ids)];
}
