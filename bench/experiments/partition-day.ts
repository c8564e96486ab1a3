/**
 * Issue 45 item 4, measured before it is built: what partitioning `email_logs` by day of its id
 * would cost and save, on this machine's Postgres (a server of its own: initdb, its own port), with
 * the table and indexes the migrations make.
 *
 * 1. The swap a migration would do on a populated table (`PART_LEGACY_ROWS`, default 5 M: ids of
 *    before 2026-12-06, 24 random base62 after `em_`): the table renamed and attached as the
 *    DEFAULT partition of a new partitioned `email_logs` with the same indexes. The lock it holds:
 *    the statement times and the worst latency of a writer inserting a row every 5 ms meanwhile.
 * 2. A day partition made while the DEFAULT holds those rows: plainly (Postgres scans the DEFAULT
 *    under ACCESS EXCLUSIVE) against the CHECK path (a `NOT VALID` check that excludes the day's
 *    ids, `VALIDATE`d under SHARE UPDATE EXCLUSIVE, then the partition made without a scan).
 * 3. Retention of one day of `PART_DAY_EMAILS` (default 1 M) emails across `PART_TENANTS` tenants:
 *    the job's way (per tenant, 5 000 rows a DELETE, each its own transaction) on one day's
 *    partition against DETACH + DROP of an identical day's partition; time and WAL bytes.
 * 4. Reads: a lookup by (tenant, id) prunes to one partition (EXPLAIN); the logs list's page 1
 *    (newest first, `LIMIT 51`) over `PART_LIST_DAYS` day partitions against the same rows in one
 *    table, planning + execution time of a prepared statement.
 *
 *   npx tsx bench/experiments/partition-day.ts
 */
import { idTime } from '@tern/kernel';
import { migratePostgres } from '@tern/stores';
import pg from 'pg';
import { startDedicatedPostgres } from '../../test/faults/servers.js';
import { createNamedDatabase } from '../../test/support/services.js';

const int = (name: string, fallback: number) => {
  const v = Number(process.env[name] ?? fallback);
  if (!(Number.isInteger(v) && v >= 0)) throw new Error(`${name} must be an integer ≥ 0`);
  return v;
};
const LEGACY_ROWS = int('PART_LEGACY_ROWS', 5_000_000);
const DAY_EMAILS = int('PART_DAY_EMAILS', 1_000_000);
const TENANTS = int('PART_TENANTS', 1_000);
const LIST_DAYS = int('PART_LIST_DAYS', 30);
const LIST_ROWS_PER_DAY = int('PART_LIST_ROWS_PER_DAY', 20_000);
const DAY_MS = 86_400_000;

const server = await startDedicatedPostgres({
  settings: ['shared_buffers = 512MB', 'max_wal_size = 16GB', 'checkpoint_timeout = 1h'],
});
const db = await createNamedDatabase(server.url, 'tern_partition_day');
const pool = new pg.Pool({ connectionString: db.url, max: 4 });
pool.on('error', () => {});
const q = async <R extends pg.QueryResultRow = Record<string, unknown>>(
  sql: string,
  params: unknown[] = [],
) => (await pool.query<R>(sql, params)).rows;
const timed = async (sql: string, params: unknown[] = []) => {
  const t = performance.now();
  await pool.query(sql, params);
  return performance.now() - t;
};
const walNow = async () => (await q<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l'))[0]!.l;
const walSince = async (lsn: string) =>
  Number((await q<{ b: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS b', [lsn]))[0]!.b);
const ms = (v: number) => `${v.toFixed(1)} ms`;
const out: string[] = [];
const say = (line: string) => {
  out.push(line);
  console.log(line);
};

try {
  await migratePostgres(pool);
  // The id's time part in SQL, checked against @tern/kernel's idTime below.
  await q(`CREATE FUNCTION exp_idtime(ms bigint) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
    DECLARE a text := '0123456789ABCDEFGHJKMNPQRSTVWXYZ'; r text := ''; m bigint := ms;
    BEGIN FOR i IN 1..10 LOOP r := substr(a, (m % 32)::int + 1, 1) || r; m := m / 32; END LOOP; RETURN r; END $$`);
  for (const t of [0, 1_765_000_000_123, Date.now()]) {
    const got = (await q<{ s: string }>('SELECT exp_idtime($1) AS s', [t]))[0]!.s;
    if (got !== idTime(t)) throw new Error(`exp_idtime(${t}) = ${got}, idTime = ${idTime(t)}`);
  }
  const now = Date.now();
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const bound = (dayMs: number) => `em_${idTime(dayMs)}`;
  const state = `'{"events":[{"type":"email.queued"},{"type":"email.sent"},{"type":"email.delivered"}],"recipients":[],"opens":0,"clicks":0,"tags":[],"provider":"smtp","note":"${'x'.repeat(300)}"}'::jsonb`;
  /** Rows with the columns the projector fills: `$1` the id, `$2` created_at, over generate_series `i`. */
  const insertRows = (target: string, count: number, idSql: string, createdSql: string) =>
    `INSERT INTO ${target} (tenant_id, id, to_email, subject, status, provider, message_id, tags, created_at, state, version, updated_at)
     SELECT 't' || (i % ${TENANTS}), ${idSql}, 'reader' || i || '@example.com', 'Subject ' || i, 'DELIVERED', 'smtp',
            'msg-' || i, '[]', ${createdSql}, ${state}, 3, now()
       FROM generate_series(1, ${count}) AS i`;

  /** `count` emails spread over the UTC day `d`, each id's time part its `created_at`. */
  const fillDay = (d: number, count: number) => {
    const ms = `${d} + (i::bigint * ${DAY_MS - 1} / ${count})`;
    return q(
      insertRows(
        'email_logs',
        count,
        `'em_' || exp_idtime(${ms}) || substr(md5(i::text), 1, 14)`,
        `to_timestamp((${ms}) / 1000.0)`,
      ),
    );
  };

  // 1. The populated table: legacy ids, created over the last 30 days.
  let t = performance.now();
  await q(
    insertRows(
      'email_logs',
      LEGACY_ROWS,
      `'em_' || translate(encode(decode(md5(random()::text) || substr(md5(random()::text), 1, 4), 'hex'), 'base64'), '+/', 'Ab')`,
      `now() - random() * interval '30 days'`,
    ),
  );
  await q('VACUUM ANALYZE email_logs');
  const size = (
    await q<{ s: string }>("SELECT pg_size_pretty(pg_total_relation_size('email_logs')) AS s")
  )[0]!.s;
  say(`populated: ${LEGACY_ROWS} legacy rows (${size} with indexes) in ${ms(performance.now() - t)}`);
  const strays = (
    await q<{ n: number }>(`SELECT count(*)::int AS n FROM email_logs WHERE id >= $1 AND id < 'em_020'`, [
      bound(today),
    ])
  )[0]!.n;
  say(`legacy ids inside the timed range from today to 2039 ('em_${idTime(today)}' … 'em_020'): ${strays}`);

  // A writer beside every step: one row every 5 ms through `email_logs`, ids of tomorrow + 2 days.
  const writer = new pg.Client({ connectionString: db.url });
  await writer.connect();
  let worst = 0;
  let writes = 0;
  let writing = true;
  const writerDone = (async () => {
    while (writing) {
      const s = performance.now();
      await writer.query(
        `INSERT INTO email_logs (tenant_id, id, status, created_at, state) VALUES ('tw', $1, 'QUEUED', now(), '{}')`,
        [`em_${idTime(today + 3 * DAY_MS + writes)}w${writes}`],
      );
      worst = Math.max(worst, performance.now() - s);
      writes++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const worstDuring = async <T>(fn: () => Promise<T>): Promise<{ value: T; worst: number }> => {
    await new Promise((r) => setTimeout(r, 50));
    worst = 0;
    const value = await fn();
    await new Promise((r) => setTimeout(r, 50));
    return { value, worst };
  };

  // The swap, one transaction, as a migration file would run it.
  const swap = await worstDuring(async () => {
    const indexes = await q<{ indexname: string }>(
      "SELECT indexname FROM pg_indexes WHERE tablename = 'email_logs' ORDER BY indexname",
    );
    const before = await q<{ relname: string; relfilenode: number }>(
      `SELECT c.relname, c.relfilenode FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'email_logs'::regclass ORDER BY 1`,
    );
    const client = await pool.connect();
    const s = performance.now();
    try {
      await client.query('BEGIN');
      await client.query('ALTER TABLE email_logs RENAME TO email_logs_default');
      for (const { indexname } of indexes)
        await client.query(
          `ALTER INDEX ${indexname} RENAME TO ${indexname.replace('email_logs', 'email_logs_default')}`,
        );
      await client.query(
        'CREATE TABLE email_logs (LIKE email_logs_default INCLUDING ALL) PARTITION BY RANGE (id)',
      );
      await client.query('ALTER TABLE email_logs ATTACH PARTITION email_logs_default DEFAULT');
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const took = performance.now() - s;
    const after = await q<{ relname: string; relfilenode: number }>(
      `SELECT c.relname, c.relfilenode FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'email_logs_default'::regclass ORDER BY 1`,
    );
    const rebuilt = after.filter((a) => !before.some((b) => b.relfilenode === a.relfilenode)).length;
    return { took, rebuilt, indexes: after.length };
  });
  say(
    `swap (rename, partitioned parent LIKE … INCLUDING ALL, ATTACH … DEFAULT): ${ms(swap.value.took)}; ` +
      `indexes rebuilt ${swap.value.rebuilt} of ${swap.value.indexes}; writer's worst insert ${ms(swap.worst)}`,
  );

  // 2. A day partition while the DEFAULT holds the legacy rows. A legacy id inside the day's
  // range (a "stray") would fail either way: moved out first (a scan of the DEFAULT under row
  // locks only, as a maintenance job would), put back through the parent once the day exists.
  const dayTable = (d: number) => `email_logs_p${new Date(d).toISOString().slice(0, 10).replaceAll('-', '')}`;
  await q('CREATE TABLE email_logs_strays (LIKE email_logs INCLUDING DEFAULTS)');
  const moveStrays = async (lo: string, hi: string) =>
    (
      await pool.query(
        `WITH m AS (DELETE FROM email_logs_default WHERE id >= $1 AND id < $2 RETURNING *)
         INSERT INTO email_logs_strays SELECT * FROM m`,
        [lo, hi],
      )
    ).rowCount ?? 0;
  const putBack = async () => {
    await q('INSERT INTO email_logs SELECT * FROM email_logs_strays');
    await q('TRUNCATE email_logs_strays');
  };
  const makeDay = (d: number) =>
    `CREATE TABLE ${dayTable(d)} PARTITION OF email_logs FOR VALUES FROM ('${bound(d)}') TO ('${bound(d + DAY_MS)}')`;
  /** The CHECK path for days [from, to): strays out, CHECK validated, the days made, strays back. */
  async function checkPath(from: number, to: number): Promise<string[]> {
    const steps: string[] = [];
    const [lo, hi] = [bound(from), bound(to)];
    // Each step with the writer's worst insert during it (while the writer runs).
    const writer = () => (writing ? ` (writer ${ms(worst)})` : '');
    worst = 0;
    steps.push(`${await moveStrays(lo, hi)} strays moved out${writer()}`);
    worst = 0;
    steps.push(
      `ADD CHECK NOT VALID ${ms(await timed(`ALTER TABLE email_logs_default ADD CONSTRAINT email_logs_default_window CHECK (id < '${lo}' OR id >= '${hi}') NOT VALID`))}${writer()}`,
    );
    worst = 0;
    steps.push(
      `VALIDATE ${ms(await timed('ALTER TABLE email_logs_default VALIDATE CONSTRAINT email_logs_default_window'))}${writer()}`,
    );
    worst = 0;
    // Postgres says at DEBUG1 whether the DEFAULT's constraints spared it the scan.
    const own = await pool.connect();
    const notices: string[] = [];
    own.on('notice', (n) => notices.push(n.message ?? ''));
    try {
      await own.query('SET client_min_messages = debug1');
      const s = performance.now();
      for (let d = from; d < to; d += DAY_MS) await own.query(makeDay(d));
      const skipped = notices.filter((m) => m.includes('is implied by existing constraints')).length;
      steps.push(
        `CREATE … PARTITION OF × ${(to - from) / DAY_MS} in ${ms(performance.now() - s)} (scan of the DEFAULT skipped ${skipped} times)${writer()}`,
      );
      await own.query('RESET client_min_messages');
    } finally {
      own.release();
    }
    steps.push(
      `DROP CONSTRAINT ${ms(await timed('ALTER TABLE email_logs_default DROP CONSTRAINT email_logs_default_window'))}`,
    );
    await putBack();
    return steps;
  }
  const strays1 = await moveStrays(bound(today + DAY_MS), bound(today + 2 * DAY_MS));
  const plain = await worstDuring(() => timed(makeDay(today + DAY_MS)));
  await putBack();
  say(
    `day partition, plain CREATE … PARTITION OF (scans the DEFAULT; ${strays1} strays moved out before): ${ms(plain.value)}; writer's worst ${ms(plain.worst)}`,
  );
  const fast = await worstDuring(() => checkPath(today + 2 * DAY_MS, today + 3 * DAY_MS));
  say(`day partition, CHECK path: ${fast.value.join(', ')}; writer's worst ${ms(fast.worst)}`);
  writing = false;
  await writerDone;
  await writer.end();
  say(`writer: ${writes} inserts in all`);
  // The past days, made at once: those of the list below and the two of the retention.
  const days = Math.max(LIST_DAYS, 5);
  say(`${days} past days by the CHECK path: ${(await checkPath(today - days * DAY_MS, today)).join(', ')}`);

  // 3. Retention of one day: identical days of DAY_EMAILS emails, each taken a different way.
  const dayB = today - 2 * DAY_MS; // dropped
  const ways: { day: number; name: string; sql: string }[] = [
    {
      day: today - 3 * DAY_MS,
      name: "on the day's partition by ctid (what the job's statement costs for these rows)",
      sql: `DELETE FROM ${dayTable(today - 3 * DAY_MS)} WHERE ctid IN (
              SELECT e.ctid FROM ${dayTable(today - 3 * DAY_MS)} e WHERE e.tenant_id = $1 AND e.created_at < $2 LIMIT 5000)`,
    },
    {
      // (tableoid, ctid): a ctid alone names a row of each partition (the job's `ctid IN` would not do).
      day: today - 4 * DAY_MS,
      name: 'through the parent by (tableoid, ctid)',
      sql: `DELETE FROM email_logs WHERE (tableoid, ctid) IN (
              SELECT e.tableoid, e.ctid FROM ${dayTable(today - 4 * DAY_MS)} e WHERE e.tenant_id = $1 AND e.created_at < $2 LIMIT 5000)`,
    },
    {
      day: today - 5 * DAY_MS,
      name: 'through the parent by key (tenant_id, id)',
      sql: `DELETE FROM email_logs WHERE (tenant_id, id) IN (
              SELECT e.tenant_id, e.id FROM ${dayTable(today - 5 * DAY_MS)} e WHERE e.tenant_id = $1 AND e.created_at < $2 LIMIT 5000)`,
    },
  ];
  const filled = [dayB, ...ways.map((w) => w.day)];
  for (const d of filled) {
    t = performance.now();
    await fillDay(d, DAY_EMAILS);
    say(
      `day ${new Date(d).toISOString().slice(0, 10)}: ${DAY_EMAILS} emails written in ${ms(performance.now() - t)}`,
    );
  }
  await q('VACUUM ANALYZE email_logs');
  let lsn = '';
  for (const way of ways) {
    await q('CHECKPOINT');
    lsn = await walNow();
    t = performance.now();
    let deleted = 0;
    let statements = 0;
    for (let tenant = 0; tenant < TENANTS; tenant++) {
      for (;;) {
        const r = await pool.query(way.sql, [`t${tenant}`, new Date(way.day + DAY_MS)]);
        statements++;
        deleted += r.rowCount ?? 0;
        if ((r.rowCount ?? 0) < 5000) break;
      }
    }
    const deleteMs = performance.now() - t;
    const deleteWal = await walSince(lsn);
    say(
      `retention of one day by DELETE ${way.name}, per tenant, ≤ 5 000 rows a statement: ${deleted} rows, ${statements} statements, ` +
        `${(deleteMs / 1000).toFixed(1)} s, WAL ${(deleteWal / 1e6).toFixed(1)} MB (a CHECKPOINT just before: each page's first change writes its full image)`,
    );
  }
  await q('CHECKPOINT');
  lsn = await walNow();
  t = performance.now();
  await q(`ALTER TABLE email_logs DETACH PARTITION ${dayTable(dayB)}`);
  await q(`DROP TABLE ${dayTable(dayB)}`);
  const dropMs = performance.now() - t;
  const dropWal = await walSince(lsn);
  say(
    `retention of one day by DETACH + DROP: ${DAY_EMAILS} rows, ${ms(dropMs)}, WAL ${(dropWal / 1e3).toFixed(1)} kB`,
  );

  // 4. Reads.
  const plan = await q<{ 'QUERY PLAN': string }>(
    `EXPLAIN (COSTS OFF) SELECT * FROM email_logs WHERE tenant_id = 't1' AND id = '${bound(today + DAY_MS)}x'`,
  );
  say(`lookup by (tenant, id): ${plan.map((r) => r['QUERY PLAN'].trim()).join(' | ')}`);
  for (let k = 1; k <= days; k++) {
    const d = today - k * DAY_MS;
    if (filled.includes(d)) continue;
    await fillDay(d, LIST_ROWS_PER_DAY);
  }
  await q('CREATE TABLE email_logs_flat (LIKE email_logs INCLUDING ALL)');
  await q('INSERT INTO email_logs_flat SELECT * FROM email_logs');
  await q('VACUUM ANALYZE email_logs');
  await q('VACUUM ANALYZE email_logs_flat');
  const partitions = (
    await q<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'email_logs'::regclass",
    )
  )[0]!.n;
  const page1 = (table: string) =>
    `SELECT id, created_at, status FROM ${table} e WHERE e.tenant_id = $1 AND e.created_at IS NOT NULL AND e.created_at >= $2
      ORDER BY e.created_at DESC, e.id COLLATE "C" DESC LIMIT 51`;
  const client = await pool.connect();
  try {
    for (const [name, table] of [
      ['one table', 'email_logs_flat'],
      [`${partitions} partitions`, 'email_logs'],
      ['one table', 'email_logs_flat'],
      [`${partitions} partitions`, 'email_logs'],
    ] as const) {
      const runs = 2000;
      const cut = new Date(now - 90 * DAY_MS);
      for (let i = 0; i < 200; i++)
        await client.query({ name: `p1-${table}`, text: page1(table), values: [`t${i % TENANTS}`, cut] });
      const s = performance.now();
      for (let i = 0; i < runs; i++)
        await client.query({ name: `p1-${table}`, text: page1(table), values: [`t${i % TENANTS}`, cut] });
      const per = (performance.now() - s) / runs;
      const explained = await client.query(
        `EXPLAIN (ANALYZE, SUMMARY) ${page1(table).replace('$1', "'t7'").replace('$2', `'${cut.toISOString()}'`)}`,
      );
      const lines = explained.rows.map((r) => String(r['QUERY PLAN']));
      const planning = lines.find((l) => l.startsWith('Planning Time')) ?? '';
      const execution = lines.find((l) => l.startsWith('Execution Time')) ?? '';
      say(
        `logs page 1 (prepared, round trip from here), ${name}: ${(per * 1000).toFixed(0)} µs per query; EXPLAIN ANALYZE once: ${planning}, ${execution}`,
      );
    }
  } finally {
    client.release();
  }
} finally {
  await pool.end();
  await db.drop().catch(() => {});
  await server.destroy().catch(() => {});
  console.log(`\n${out.join('\n')}`);
}
