import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import type { AnalyticsCounters } from '@tern/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ChdbPathConflictError,
  type ClickHouseStore,
  createClickHouse,
  DEFAULT_CLICKHOUSE_MIGRATIONS_DIR,
  migrateClickHouse,
} from '../src/index.js';

// chDB binds one data directory per process: every chDB case lives in this one file and shares
// `dataDir` (vitest runs each file in its own fork).

/** A row of `email_daily_v2`: the domain's counters but `machineOpened`. */
type DailyRow = { tenant_id: string; day: string; template_id: string } & Omit<
  AnalyticsCounters,
  'machineOpened'
>;

function row(overrides: Partial<DailyRow>): DailyRow {
  return {
    tenant_id: 't1',
    day: '2024-05-01',
    template_id: '',
    total: 1,
    sent: 1,
    opened: 0,
    clicked: 0,
    bounced: 0,
    complained: 0,
    failed: 0,
    ...overrides,
  };
}

async function ship(client: ClickHouseClient, batchId: string, rows: DailyRow[]): Promise<void> {
  await client.insert({
    table: 'email_daily_v2',
    values: rows,
    format: 'JSONEachRow',
    clickhouse_settings: { insert_deduplication_token: batchId },
  });
}

async function totals(client: ClickHouseClient, tenant: string): Promise<{ total: number; sent: number }> {
  const rs = await client.query({
    query: `SELECT sum(total) AS total, sum(sent) AS sent FROM email_daily_v2 WHERE tenant_id = {tenant:String}`,
    query_params: { tenant },
    format: 'JSONEachRow',
  });
  const [first] = await rs.json<{ total: number | string; sent: number | string }>();
  return { total: Number(first?.total), sent: Number(first?.sent) };
}

describe('embedded chDB', () => {
  let dataDir: string;
  let store: ClickHouseStore;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'tern-chdb-'));
    store = createClickHouse({ dataDir });
  });

  afterAll(async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('is chDB and migrates idempotently', async () => {
    expect(store.kind).toBe('chdb');
    // Every migration of the repository, in order.
    const all = (await readdir(DEFAULT_CLICKHOUSE_MIGRATIONS_DIR)).filter((n) => n.endsWith('.sql')).sort();
    expect(all.slice(0, 2)).toEqual(['0001_email_daily_v1.sql', '0002_email_daily_v2.sql']);
    expect(await migrateClickHouse(store.client)).toEqual({ applied: all });
    expect(await migrateClickHouse(store.client)).toEqual({ applied: [] });
    const rs = await store.client.query({
      query: `SELECT name, type, comment FROM system.columns
               WHERE database = currentDatabase() AND table = 'email_daily_v2' ORDER BY position`,
      format: 'JSONEachRow',
    });
    const columns = await rs.json<{ name: string; type: string; comment: string }>();
    expect(columns.map((c) => `${c.name} ${c.type}`)).toEqual([
      'tenant_id String',
      'day Date',
      'template_id String',
      'total Int64',
      'sent Int64',
      'opened Int64',
      'clicked Int64',
      'bounced Int64',
      'complained Int64',
      'failed Int64',
    ]);
    expect(columns.every((c) => c.comment.length > 0)).toBe(true);
  });

  it('counts a batch shipped twice once', async () => {
    const batch = [row({ tenant_id: 'dup' }), row({ tenant_id: 'dup', day: '2024-05-02' })];
    await ship(store.client, 'b1', batch);
    await ship(store.client, 'b1', batch);
    expect(await totals(store.client, 'dup')).toEqual({ total: 2, sent: 2 });
  });

  it('sums identical deltas of different batches (deduplication is by token, not by content)', async () => {
    const same = [row({ tenant_id: 'same', total: 1, sent: 1 })];
    await ship(store.client, 'same-1', same);
    await ship(store.client, 'same-2', same);
    await ship(store.client, 'same-3', same);
    expect(await totals(store.client, 'same')).toEqual({ total: 3, sent: 3 });
  });

  it('merges rows of one (tenant, day, template) into one, sums unchanged', async () => {
    await ship(store.client, 'm1', [row({ tenant_id: 'merge', total: 2, sent: 1 })]);
    await ship(store.client, 'm2', [row({ tenant_id: 'merge', total: -1, sent: 1 })]);
    await ship(store.client, 'm3', [row({ tenant_id: 'merge', total: 4, sent: 0 })]);
    await store.client.command({ query: 'OPTIMIZE TABLE email_daily_v2 FINAL' });
    const raw = await store.client.query({
      query: `SELECT count() AS n FROM email_daily_v2 WHERE tenant_id = 'merge'`,
      format: 'JSONEachRow',
    });
    expect((await raw.json<{ n: number | string }>()).map((r) => Number(r.n))).toEqual([1]);
    expect(await totals(store.client, 'merge')).toEqual({ total: 5, sent: 2 });
  });

  it('sums signed deltas of different batches', async () => {
    await ship(store.client, 'd1', [row({ tenant_id: 'delta', total: 1, sent: 0 })]);
    await ship(store.client, 'd2', [row({ tenant_id: 'delta', total: 0, sent: 1 })]);
    await ship(store.client, 'd3', [row({ tenant_id: 'delta', total: 0, sent: -1 })]);
    expect(await totals(store.client, 'delta')).toEqual({ total: 1, sent: 0 });
  });

  it('does not let one call’s settings leak into the next (insert token)', async () => {
    await ship(store.client, 'leak', [row({ tenant_id: 'leak' })]);
    // Same token, different batch: deduplicated only if the earlier call's token were still set.
    await store.client.insert({
      table: 'email_daily_v2',
      values: [row({ tenant_id: 'leak' })],
      format: 'JSONEachRow',
    });
    expect(await totals(store.client, 'leak')).toEqual({ total: 2, sent: 2 });
    const rs = await store.client.query({
      query: `SELECT getSetting('insert_deduplication_token') AS token`,
      format: 'JSONEachRow',
    });
    expect(await rs.json()).toEqual([{ token: '' }]);
  });

  it('binds query_params', async () => {
    const rs = await store.client.query({
      query: `SELECT {s:String} AS s, {n:Int64} + 1 AS n, {d:Date} AS d, {xs:Array(String)} AS xs`,
      query_params: { s: "it's", n: 41, d: '2024-05-01', xs: ['a', 'b'] },
      format: 'JSONEachRow',
    });
    const [first] = await rs.json<{ s: string; n: number | string; d: string; xs: string[] }>();
    expect({ ...first, n: Number(first?.n) }).toEqual({ s: "it's", n: 42, d: '2024-05-01', xs: ['a', 'b'] });
  });

  it('shares one engine per process: same path → same client, other path → clear error', async () => {
    const second = createClickHouse({ dataDir });
    expect(second.client).toBe(store.client);
    await second.close();
    // The first handle still works after the second closed.
    expect(await totals(store.client, 'dup')).toEqual({ total: 2, sent: 2 });

    expect(() => createClickHouse({ dataDir: join(dataDir, 'elsewhere') })).toThrow(ChdbPathConflictError);
    expect(() => createClickHouse({ dataDir: join(dataDir, 'elsewhere') })).toThrow(
      /binds one data directory per process/,
    );
    expect(() => createClickHouse({ dataDir, database: 'analytics' })).toThrow(/only the "default" database/);
  });

  it('keeps data across close and reopen', async () => {
    await store.close();
    store = createClickHouse({ dataDir });
    expect(await totals(store.client, 'dup')).toEqual({ total: 2, sent: 2 });
    expect(await migrateClickHouse(store.client)).toEqual({ applied: [] });
  });

  it('uses HTTP when a URL is given', async () => {
    const server = createClickHouse({ clickhouseUrl: 'http://127.0.0.1:8123', dataDir });
    expect(server.kind).toBe('server');
    expect(server.client).not.toBe(store.client);
    await server.close();
  });
});
