import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase } from '../../../test/support/services.js';
import { autovacuumDue, createPostgres, type PostgresStore, runAutovacuum } from '../src/index.js';

/**
 * The embedded database's autovacuum (src/autovacuum.ts) on PGlite, which runs none of its own:
 * the launcher's rule picks what Postgres's would, each table is vacuumed or analysed, a table
 * dropped meanwhile is passed over, and an opened store runs it by itself.
 */

interface TableStats {
  live: number;
  dead: number;
  vacuumed: boolean;
  analysed: boolean;
}

async function statsOf(pool: pg.Pool, table: string): Promise<TableStats> {
  await pool.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await pool.query<{ live: string; dead: string; vacuumed: boolean; analysed: boolean }>(
    `SELECT n_live_tup AS live, n_dead_tup AS dead, last_vacuum IS NOT NULL AS vacuumed,
            last_analyze IS NOT NULL AS analysed
       FROM pg_stat_user_tables WHERE relname = $1`,
    [table],
  );
  const r = rows[0]!;
  return { live: Number(r.live), dead: Number(r.dead), vacuumed: r.vacuumed, analysed: r.analysed };
}

async function reltuples(pool: pg.Pool, table: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT reltuples::float8 AS n FROM pg_class WHERE relname = $1`,
    [table],
  );
  return rows[0]!.n;
}

/** `pool` whose first statement starting with `prefix` runs `before` first (one of the pass's turns). */
function beforeFirst(pool: pg.Pool, prefix: string, before: () => Promise<unknown>): pg.Pool {
  let done = false;
  const query = async (sql: string, values?: unknown[]) => {
    if (!done && sql.startsWith(prefix)) {
      done = true;
      await before();
    }
    return pool.query(sql, values);
  };
  return { query } as unknown as pg.Pool;
}

async function churn(pool: pg.Pool, table: string, rows = 2000): Promise<void> {
  await pool.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text)`);
  await pool.query(`INSERT INTO ${table} SELECT g, 'v' || g FROM generate_series(1, ${rows}) g`);
}

const due = async (pool: pg.Pool) => (await autovacuumDue(pool)).map((d) => d.table);

describe('autovacuum on PGlite', () => {
  let dir: string;
  let store: PostgresStore;
  let pool: pg.Pool;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tern-autovacuum-'));
    store = await createPostgres({ dataDir: dir, autovacuumNaptimeMs: 0 });
    pool = store.pool;
  }, 600_000);

  afterAll(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('vacuums and analyses what the launcher would, and leaves the rest', async () => {
    await pool.query('CREATE TABLE av_churn (id int PRIMARY KEY, v text)');
    await pool.query('CREATE TABLE av_quiet (id int PRIMARY KEY, v text)');
    await pool.query(`INSERT INTO av_churn SELECT g, 'v' || g FROM generate_series(1, 2000) g`);
    await pool.query(`INSERT INTO av_quiet SELECT g, 'v' || g FROM generate_series(1, 40) g`);
    // Never analysed: the planner's guess, not the table.
    expect(await reltuples(pool, 'av_churn')).toBe(-1);
    // Samples of 3 000 rows: an analyze holds its sample in memory PGlite never gives back (PGLITE_CONF).
    expect((await pool.query('SHOW default_statistics_target')).rows[0].default_statistics_target).toBe('10');

    // 2 000 inserts: over 1 000 + 20 % of 0 (inserts) and 50 + 10 % of 0 (changes). 40: under both.
    const first = await runAutovacuum(pool);
    expect(first.vacuumed).toContain('public.av_churn');
    expect(first.vacuumed).not.toContain('public.av_quiet');
    expect(first.analyzed).not.toContain('public.av_quiet');
    expect(await statsOf(pool, 'av_quiet')).toMatchObject({ vacuumed: false, analysed: false });
    expect(await reltuples(pool, 'av_churn')).toBe(2000);
    expect(await statsOf(pool, 'av_churn')).toMatchObject({ vacuumed: true, analysed: true, live: 2000 });

    // 300 dead rows: under 50 + 20 % of 2 000 = 450 for a vacuum, over 50 + 10 % = 250 for an analyze.
    await pool.query('DELETE FROM av_churn WHERE id <= 300');
    expect(await due(pool)).toEqual(['public.av_churn']);
    const second = await runAutovacuum(pool);
    expect(second).toMatchObject({ vacuumed: [], analyzed: ['public.av_churn'], gone: [], failed: [] });
    expect((await statsOf(pool, 'av_churn')).dead).toBe(300);

    // 200 more (500 dead): over 450, vacuumed; the dead rows are gone.
    await pool.query('DELETE FROM av_churn WHERE id <= 500');
    const third = await runAutovacuum(pool);
    expect(third.vacuumed).toEqual(['public.av_churn']);
    expect(await statsOf(pool, 'av_churn')).toMatchObject({ dead: 0, live: 1500 });
    expect(await due(pool)).toEqual([]);
  });

  it('passes over a table dropped between the look and its turn, and does the rest', async () => {
    await churn(pool, 'av_drop_a');
    await churn(pool, 'av_drop_b');
    const run = await runAutovacuum(beforeFirst(pool, 'VACUUM', () => pool.query('DROP TABLE av_drop_b')));
    expect(run).toMatchObject({ vacuumed: ['public.av_drop_a'], gone: ['public.av_drop_b'], failed: [] });
  });

  it('runs by itself in an opened store, and its close waits for a pass', async () => {
    const own = await createPostgres({ dataDir: join(dir, 'own'), autovacuumNaptimeMs: 100 });
    try {
      await churn(own.pool, 'av_own');
      const deadline = Date.now() + 20_000;
      while (!(await statsOf(own.pool, 'av_own')).vacuumed && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(await statsOf(own.pool, 'av_own')).toMatchObject({ vacuumed: true, analysed: true });
      expect(await reltuples(own.pool, 'av_own')).toBe(2000);
    } finally {
      await own.close();
    }
  }, 600_000);
});

describe('autovacuum across a close of PGlite', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tern-autovacuum-carry-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  // PGlite keeps no statistics across a close; the store saves the counts for the next open.
  const open = () => createPostgres({ dataDir: dir, autovacuumNaptimeMs: 3_600_000 });
  const file = () => join(dir, 'pglite.counters.json');

  it('counts dead rows of before the close: 300 then 200 make the 500 a vacuum waits for', async () => {
    const first = await open();
    try {
      await churn(first.pool, 'av_carry');
      expect((await first.autovacuum!.runOnce()).vacuumed).toEqual(['public.av_carry']);
      await first.pool.query('DELETE FROM av_carry WHERE id <= 300');
      // Under 50 + 20 % of 2 000 dead rows: analysed (300 changes > 250), not vacuumed.
      expect(await first.autovacuum!.runOnce()).toMatchObject({
        vacuumed: [],
        analyzed: ['public.av_carry'],
      });
    } finally {
      await first.close();
    }
    expect(existsSync(file())).toBe(true);

    const second = await open();
    try {
      expect(existsSync(file())).toBe(false); // taken: a crash now carries nothing
      expect((await statsOf(second.pool, 'av_carry')).dead).toBe(0); // PGlite's own: lost
      await second.pool.query('DELETE FROM av_carry WHERE id <= 500');
      // 200 counted by this session, 300 carried: over 450.
      expect((await second.autovacuum!.runOnce()).vacuumed).toEqual(['public.av_carry']);
      // The vacuum settled the carried dead rows; 200 changes stay short of an analyze (50 + 10 % of 1 700).
      expect((await second.autovacuum!.counts())['public.av_carry']).toEqual({
        dead: 0,
        inserted: 0,
        changed: 200,
      });
    } finally {
      await second.close();
    }
  }, 600_000);

  it('an unreadable file of counts starts from none', async () => {
    await writeFile(file(), '{"public.av_carry": {"dead": "many"}}');
    const store = await open();
    try {
      expect(existsSync(file())).toBe(false);
      expect(await store.autovacuum!.runOnce()).toMatchObject({ failed: [], gone: [] });
    } finally {
      await store.close();
    }
  }, 600_000);
});

describe('autovacuum on a server', () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;
  let other: pg.Pool;

  beforeAll(async () => {
    db = await createFreshDatabase();
    // A lock not had within 300 ms is refused, as a deployment's statement bounds would.
    pool = new pg.Pool({ connectionString: db.url, max: 1, options: '-c lock_timeout=300' });
    other = new pg.Pool({ connectionString: db.url, max: 1 });
  });

  afterAll(async () => {
    await pool?.end();
    await other?.end();
    await db?.drop();
  });

  it('a table it cannot lock is refused, the others are vacuumed, and the next pass takes it', async () => {
    await churn(pool, 'av_locked');
    await churn(pool, 'av_free');
    const holder = await other.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE av_locked IN ACCESS EXCLUSIVE MODE');
      const run = await runAutovacuum(pool);
      expect(run.vacuumed).toEqual(['public.av_free']);
      expect(run.failed).toEqual([{ table: 'public.av_locked', code: '55P03' }]);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    // The session that was refused still works, and the table is taken on the next pass.
    expect((await runAutovacuum(pool)).vacuumed).toEqual(['public.av_locked']);
  });
});
