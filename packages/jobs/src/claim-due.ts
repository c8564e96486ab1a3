import type pg from 'pg';

/**
 * The lease claim of Tern's durable jobs (the sender's due-list, webhook deliveries and replays,
 * campaign fan-outs, sequence steps): one statement picks the due rows with
 * `FOR UPDATE SKIP LOCKED` (two claimers never take the same row, neither waits for the other)
 * and stamps them with the caller's lease in the same statement, so a row is claimed by exactly
 * one worker until its lease lapses — then the `due` predicate (which names the lapsed lease)
 * hands it to the next claimer.
 *
 * Every SQL fragment is the caller's own text with its own `$n` parameters; only `table`, `alias`
 * and `keys` are checked identifiers.
 */
export interface ClaimDueSpec {
  table: string;
  /** Alias of the updated table, usable in `set` and `returning`. Default `t`. */
  alias?: string;
  /** The columns that identify a row. Default `['id']`. */
  keys?: readonly string[];
  /**
   * Which rows are claimable now (unqualified columns of `table`), lapsed leases included. Several
   * conditions (say, one per state) are claimed as one: each is its own locking scan in `orderBy`
   * order with the limit, and the first `limit` of them all in that order are taken. Each scan can
   * then walk an index in claim order and stop after `limit` unlocked rows; one condition joining
   * them with OR had Postgres fetch and sort every due row for each claim (a campaign's whole
   * backlog). With several, `orderBy` must be plain columns (each optionally ASC or DESC).
   */
  due: string | readonly string[];
  /** Claim order, e.g. `due_at`. */
  orderBy: string;
  /** Rows at most: a number or a `$n` parameter. */
  limit: number | string;
  /** The `SET` list that takes the lease, e.g. `lease_until = $2`. */
  set: string;
  /** The `RETURNING` list. Default `<alias>.*`. */
  returning?: string;
}

const identifier = /^[a-z_][a-z0-9_]{0,62}$/;

function checked(name: string): string {
  if (!identifier.test(name)) throw new Error(`claimDue: invalid identifier ${JSON.stringify(name)}`);
  return name;
}

/** The columns of a plain `orderBy` (`a, b DESC`), checked. */
function orderColumns(orderBy: string): string[] {
  return orderBy.split(',').map((term) => {
    const [column, direction, ...rest] = term.trim().split(/\s+/);
    if (rest.length > 0 || (direction !== undefined && !/^(ASC|DESC)$/i.test(direction)))
      throw new Error(
        `claimDue: orderBy must be plain columns with several due conditions, not ${JSON.stringify(term)}`,
      );
    return checked(column ?? '');
  });
}

/**
 * The claim statement: `UPDATE … FROM (SELECT keys … FOR UPDATE SKIP LOCKED) due … RETURNING …`;
 * with several due conditions, one locking scan each (`WITH c0 AS MATERIALIZED (…), c1 …`) and the
 * first `limit` of their rows. A row a scan locked but the limit left out stays as it was (its
 * lock ends with the statement).
 */
export function claimDueSql(spec: ClaimDueSpec): string {
  const table = checked(spec.table);
  const alias = checked(spec.alias ?? 't');
  const keys = (spec.keys ?? ['id']).map(checked);
  if (keys.length === 0) throw new Error('claimDue: keys must name at least one column');
  if (typeof spec.limit === 'number' && !(Number.isInteger(spec.limit) && spec.limit >= 1))
    throw new Error('claimDue: limit must be a positive integer');
  if (typeof spec.limit === 'string' && !/^\$\d+$/.test(spec.limit))
    throw new Error('claimDue: limit must be a number or a $n parameter');
  const join = keys.map((k) => `${alias}.${k} = due.${k}`).join(' AND ');
  const returning = spec.returning ?? `${alias}.*`;
  if (typeof spec.due !== 'string') {
    if (spec.due.length === 0) throw new Error('claimDue: due must name at least one condition');
    const columns = [...new Set([...keys, ...orderColumns(spec.orderBy)])].join(', ');
    const scans = spec.due.map(
      (due, n) => `c${n} AS MATERIALIZED (SELECT ${columns} FROM ${table}
           WHERE (${due})
           ORDER BY ${spec.orderBy}
           LIMIT ${spec.limit}
           FOR UPDATE SKIP LOCKED)`,
    );
    return `WITH ${scans.join(',\n    ')},
    due AS (SELECT ${keys.join(', ')} FROM (${spec.due.map((_, n) => `SELECT * FROM c${n}`).join(' UNION ALL ')}) candidates
            ORDER BY ${spec.orderBy}
            LIMIT ${spec.limit})
    UPDATE ${table} ${alias} SET ${spec.set}
    FROM due
   WHERE ${join}
   RETURNING ${returning}`;
  }
  return `UPDATE ${table} ${alias} SET ${spec.set}
    FROM (SELECT ${keys.join(', ')} FROM ${table}
           WHERE (${spec.due})
           ORDER BY ${spec.orderBy}
           LIMIT ${spec.limit}
           FOR UPDATE SKIP LOCKED) due
   WHERE ${join}
   RETURNING ${returning}`;
}

/** Runs the claim statement of `spec` with `params`; resolves with the rows claimed. */
export async function claimDue<R extends pg.QueryResultRow>(
  client: Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>,
  spec: ClaimDueSpec,
  params: readonly unknown[],
): Promise<R[]> {
  const { rows } = await client.query<R>(claimDueSql(spec), [...params]);
  return rows;
}
