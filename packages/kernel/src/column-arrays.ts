/**
 * The parameters of a many-row statement that `unnest`s one array a column (`unnest($1::text[],
 * $2::bigint[], …)`): for each of `keys`, in order, its values row by row. A caller adds the
 * columns it has to convert (a `JSON.stringify`) after these.
 */
export function columnArrays<T, K extends keyof T>(rows: readonly T[], keys: readonly K[]): T[K][][] {
  return keys.map((k) => rows.map((r) => r[k]));
}
