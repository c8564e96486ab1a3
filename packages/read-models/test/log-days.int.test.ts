// The log partitioned by day (migration 0560, issue 45 item 4) on a Postgres server and on PGlite:
// the migration of a populated log moves no row and builds no index; the days are made ahead with
// the DEFAULT's strays moved in, while writes go on (a write the window refuses is retried, never
// lost); a lookup by key reads one partition; a day goes whole once every email in it expired.
import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DAY_MS } from '@tern/domain';
import { idTime } from '@tern/kernel';
import {
  classifyStoreError,
  createPostgres,
  DEFAULT_POSTGRES_MIGRATIONS_DIR,
  migratePostgres,
  type PostgresKind,
} from '@tern/stores';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import { createFreshDatabase, tempDir } from '../../../test/support/services.js';
import { dropExpiredLogDays, ensureLogDays, LOG_DAYS_WINDOW, logDay, logDays } from '../src/index.js';

const DAY0 = Date.parse('2026-11-10T00:00:00Z');
const at = (days: number, ms = 0) => new Date(DAY0 + days * DAY_MS + ms);
/** An email id made at `t`, as the api makes one. */
const idAt = (t: Date, n: number) => `em_${idTime(t.getTime())}${String(n).padStart(16, '0')}`;
/** An id of the shape before the time prefix: 24 characters of base62 after `em_`. */
const legacyId = (n: number) => `em_${(n * 7_919).toString(36).padStart(24, 'q')}`;

async function insert(pool: pg.Pool, tenant: string, id: string, createdAt: Date | null): Promise<void> {
  await pool.query(
    `INSERT INTO email_logs (tenant_id, id, status, created_at, state) VALUES ($1, $2, 'SENT', $3, '{}')`,
    [tenant, id, createdAt],
  );
}

/** The table holding each row of `tenant`, by id. */
async function where(pool: pg.Pool, tenant: string): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ id: string; t: string }>(
    'SELECT id, tableoid::regclass::text AS t FROM email_logs WHERE tenant_id = $1',
    [tenant],
  );
  return Object.fromEntries(rows.map((r) => [r.id, r.t]));
}

describe('migration 0560 on a populated log', () => {
  /** Migrations up to 0550, 3 000 rows, then 0560: nothing moved, nothing rebuilt. */
  async function migrateTwice(pool: pg.Pool): Promise<void> {
    const before = tempDir('tern-mig-0550-');
    for (const f of readdirSync(DEFAULT_POSTGRES_MIGRATIONS_DIR))
      if (f < '0560') copyFileSync(join(DEFAULT_POSTGRES_MIGRATIONS_DIR, f), join(before, f));
    await migratePostgres(pool, before);
    await pool.query(
      `INSERT INTO email_logs (tenant_id, id, status, created_at, state, project_id)
       SELECT 't' || (g % 7), 'em_' || md5(g::text), 'SENT', now() - g * interval '1 minute', '{}',
              CASE WHEN g % 2 = 0 THEN 'prj_1' END
         FROM generate_series(1, 3000) AS g`,
    );
    const files = async () =>
      (
        await pool.query<{ relfilenode: number }>(
          `SELECT c.relfilenode FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid = $1::regclass ORDER BY 1`,
          [(await pool.query("SELECT to_regclass('email_logs_default') AS t")).rows[0].t ?? 'email_logs'],
        )
      ).rows.map((r) => r.relfilenode);
    const indexFiles = await files();
    expect(indexFiles).toHaveLength(4);
    await migratePostgres(pool);
    expect(await files()).toEqual(indexFiles);
    const { rows } = await pool.query<{ kind: string; n: number; inDefault: number; attached: number }>(
      `SELECT (SELECT relkind::text FROM pg_class WHERE relname = 'email_logs') AS kind,
              (SELECT count(*)::int FROM email_logs) AS n,
              (SELECT count(*)::int FROM email_logs_default) AS "inDefault",
              (SELECT count(*)::int FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
                WHERE x.indrelid = 'email_logs_default'::regclass) AS attached`,
    );
    expect(rows[0]).toEqual({ kind: 'p', n: 3000, inDefault: 3000, attached: 4 });
    // The rows answer by key, and the log takes new ones.
    const one = await pool.query(
      "SELECT id FROM email_logs WHERE tenant_id = 't1' AND id = 'em_' || md5('1')",
    );
    expect(one.rowCount).toBe(1);
    await insert(pool, 't1', 'em_new', new Date());
  }

  it('on a Postgres server', async () => {
    const db = await createFreshDatabase();
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      await migrateTwice(pool);
    } finally {
      await pool.end();
      await db.drop();
    }
  }, 120_000);

  it('on PGlite', async () => {
    const store = await createPostgres({ dataDir: tempDir('tern-mig-pglite-') });
    try {
      await migrateTwice(store.pool);
    } finally {
      await store.close();
    }
  }, 180_000);
});

onEveryPostgres("the log's day partitions", (db: () => pg.Pool, kind: PostgresKind) => {
  it('makes the days ahead once, moving into them the DEFAULT rows of their ids', async () => {
    const tenant = `days-${kind}`;
    // Before the days exist: a row of day 1 (made late) and an old-shape id inside day 2.
    const late = idAt(at(1, 3_600_000), 1);
    const stray = `em_${idTime(at(2, 60_000).getTime())}zzzzzzzzzzzzzz`;
    const outside = legacyId(3);
    for (const id of [late, stray, outside]) await insert(db(), tenant, id, at(0));
    const made = await ensureLogDays(db(), at(1, 5), 3);
    expect(made).toEqual({ made: [logDay(at(1)).name, logDay(at(2)).name, logDay(at(3)).name], moved: 2 });
    expect(await where(db(), tenant)).toEqual({
      [late]: logDay(at(1)).name,
      [stray]: logDay(at(2)).name,
      [outside]: 'email_logs_default',
    });
    // Again: nothing to make; one day more: only that one.
    expect(await ensureLogDays(db(), at(1), 3)).toEqual({ made: [], moved: 0 });
    expect((await ensureLogDays(db(), at(1), 4)).made).toEqual([logDay(at(4)).name]);
    expect((await logDays(db())).map((d) => d.name)).toEqual([1, 2, 3, 4].map((d) => logDay(at(d)).name));
    const windows = await db().query("SELECT 1 FROM pg_constraint WHERE conname LIKE '%partition_window'");
    expect(windows.rowCount).toBe(0);
  });

  it('a run that fails in its second step leaves no window: the DEFAULT takes those ids again', async () => {
    const tenant = `fail-${kind}`;
    // A table of the day's name that is no partition: making the day fails.
    await db().query(`CREATE TABLE ${logDay(at(50)).name} (x int)`);
    try {
      await expect(ensureLogDays(db(), at(50), 1)).rejects.toThrow(/already exists/);
      const windows = await db().query("SELECT 1 FROM pg_constraint WHERE conname LIKE '%partition_window'");
      expect(windows.rowCount).toBe(0);
      await insert(db(), tenant, idAt(at(50, 5), 1), at(0));
      expect(Object.values(await where(db(), tenant))).toEqual(['email_logs_default']);
    } finally {
      await db().query(`DROP TABLE ${logDay(at(50)).name}`);
    }
  });

  it('a lookup by key reads the one day of its id', async () => {
    const tenant = `prune-${kind}`;
    const id = idAt(at(2, 7_200_000), 2);
    await insert(db(), tenant, id, at(2));
    const plan = await db().query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT status FROM email_logs WHERE tenant_id = '${tenant}' AND id = '${id}'`,
    );
    const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).toContain(logDay(at(2)).name);
    expect(text).not.toMatch(/email_logs_(default|d\d{8})\b[\s\S]*email_logs_(default|d\d{8})\b/);
  });

  it('writes go on while days are made: a write the window refuses is retried, none lost or doubled', async () => {
    const tenant = `race-${kind}`;
    // Rows of the days being made (10–12) and of no day, written while they are made, one by one.
    const ids = Array.from({ length: 120 }, (_, i) =>
      i % 4 === 3 ? legacyId(100 + i) : idAt(at(10 + (i % 3), i * 1_000), i),
    );
    const writer = (async () => {
      for (const id of ids)
        for (;;) {
          try {
            await insert(db(), tenant, id, at(0));
            break;
          } catch (err) {
            // Only the window may refuse a row, and only as "unavailable".
            expect((err as { constraint?: string }).constraint).toMatch(LOG_DAYS_WINDOW);
            expect(classifyStoreError(err)).toBe('unavailable');
            // Backed off as the projector's retry is (a writer that never yields would keep the
            // one PGlite session from the run that ends the window).
            await new Promise((r) => setTimeout(r, 5));
          }
        }
    })();
    const made = await Promise.all([1, 2, 3].map(() => ensureLogDays(db(), at(10), 3)));
    await writer;
    expect(made.flatMap((m) => m.made).sort()).toEqual([10, 11, 12].map((d) => logDay(at(d)).name));
    const placed = await where(db(), tenant);
    expect(Object.keys(placed).sort()).toEqual([...ids].sort());
    for (const [id, table] of Object.entries(placed)) {
      const day = (await logDays(db())).find((d) => id >= d.lo && id < d.hi);
      expect(table).toBe(day?.name ?? 'email_logs_default');
    }
    // The window, while it stands, refuses such a row as unavailable (what the writer retried on).
    const w = 'email_logs_w_0000000000_0000000000_partition_window';
    await db().query(
      `ALTER TABLE email_logs_default ADD CONSTRAINT ${w}
         CHECK (id < '${logDay(at(20)).lo}' OR id >= '${logDay(at(20)).hi}') NOT VALID`,
    );
    try {
      const err = await insert(db(), tenant, idAt(at(20), 1), at(0)).catch((e: unknown) => e);
      expect(classifyStoreError(err)).toBe('unavailable');
    } finally {
      await db().query(`ALTER TABLE email_logs_default DROP CONSTRAINT ${w}`);
    }
  });

  it('drops a day whose every email expired; keeps a day with a kept email, a send not final or one not queued', async () => {
    // Days 30–34; expiry at day 40: tenant A's cut-off is day 36, B's (a longer retention) day 32.
    expect((await ensureLogDays(db(), at(30), 5)).made).toHaveLength(5);
    const [a, b] = [`drop-a-${kind}`, `drop-b-${kind}`];
    const cutoffOf = (tenant: string) => (tenant === b ? at(32) : at(36));
    const rows: [string, string, Date | null][] = [
      [a, idAt(at(30, 1), 1), at(30)], // day 30: A only → dropped
      [a, idAt(at(30, 2), 2), at(30, 10)],
      [a, idAt(at(31, 1), 3), at(31)], // day 31: A and B, both expired → dropped
      [b, idAt(at(31, 2), 4), at(31, 5)],
      [b, idAt(at(32, 1), 5), at(32)], // day 32: B's email at its cut-off → kept
      [a, idAt(at(33, 1), 6), at(33)], // day 33: a send not final → kept
      [a, idAt(at(34, 1), 7), null], // day 34: an email not queued yet → kept
      [a, idAt(at(34, 2), 8), at(34)],
    ];
    for (const [tenant, id, created] of rows) await insert(db(), tenant, id, created);
    const notFinal = rows[5]![1];
    // The earlier tests' days (1–4, 10–12: rows queued at day 0) have expired too.
    const expired = [1, 2, 3, 4, 10, 11, 12, 30, 31].map((d) => logDay(at(d)).name);
    const held = await db().query<{ n: number }>(
      'SELECT count(*)::int AS n FROM email_logs WHERE tableoid::regclass::text = ANY ($1)',
      [expired],
    );
    expect(held.rows[0]!.n).toBeGreaterThan(4);
    const gone = await dropExpiredLogDays(db(), at(40), {
      cutoffOf,
      sendNotFinal: (alias, id) => `${alias}.${id} = '${notFinal}'`,
    });
    expect(gone).toEqual({ dropped: expired, rows: held.rows[0]!.n });
    const left = (await logDays(db())).map((d) => d.name);
    for (const d of [30, 31]) expect(left).not.toContain(logDay(at(d)).name);
    for (const d of [32, 33, 34]) expect(left).toContain(logDay(at(d)).name);
    expect(Object.keys(await where(db(), a)).sort()).toEqual([rows[5]![1], rows[6]![1], rows[7]![1]].sort());
    // A day that has not ended is never dropped, whatever the cut-offs.
    const today = await dropExpiredLogDays(db(), at(33, 5), {
      cutoffOf: () => at(99),
      sendNotFinal: () => 'false',
    });
    expect(today.dropped).toEqual([logDay(at(32)).name]);
  });
});
