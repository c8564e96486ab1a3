import { execFile } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { ClickHouseClient } from '@clickhouse/client';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);

/**
 * The ClickHouse figures of several projector processes, each with its own embedded engine (no
 * ClickHouse server on this machine): the oracle's query runs against every data directory (a
 * child process each) and the counters of rows with the same key are added. A partition is folded
 * by one member at a time, and Postgres drops an event folded twice, so no figure is missing from
 * the sum. It may hold more than one server would: an outbox batch is shipped by its projector and
 * also by another one's sweep of batches older than 10 s (a slow ship on a loaded machine), and
 * only one server drops the second copy by its deduplication token (daily-analytics.ts). Only
 * `query` of the client is provided: what compareWithOracle uses.
 */
export function summedClickHouse(
  dataDirs: string[],
  keys: string[],
): { client: ClickHouseClient; rows(): Record<string, string | number>[] } {
  let last: Record<string, string | number>[] = [];
  const client = {
    async query(params: { query: string; query_params?: Record<string, unknown> }) {
      const sums = new Map<string, Record<string, string | number>>();
      for (const dir of dataDirs) {
        const { stdout } = await run(
          join(root, 'node_modules/.bin/tsx'),
          [
            join(root, 'test/cluster/ch-query.mts'),
            dir,
            JSON.stringify({ query: params.query, query_params: params.query_params }),
          ],
          { cwd: root, maxBuffer: 64 * 1024 * 1024, timeout: 300_000 },
        );
        for (const row of JSON.parse(stdout) as Record<string, string | number>[]) {
          const key = keys.map((k) => String(row[k])).join('|');
          const seen = sums.get(key);
          if (!seen) {
            sums.set(key, { ...row });
            continue;
          }
          for (const [k, v] of Object.entries(row))
            if (!keys.includes(k)) seen[k] = Number(seen[k]) + Number(v);
        }
      }
      const rows = [...sums.values()];
      last = rows;
      return { json: async () => rows };
    },
  } as unknown as ClickHouseClient;
  return { client, rows: () => last };
}

/**
 * ClickHouse against the oracle's figures, from the diffs of compareWithOracle: `lost` (a figure
 * under the oracle's) must be 0; `over` (above it) is what the separate engines could not
 * deduplicate (summedClickHouse).
 */
export function clickhouseShortfall(
  expected: Map<string, Record<string, number>>,
  rows: Record<string, string | number>[],
  keys: string[],
): { lost: number; over: number } {
  const actual = new Map(rows.map((r) => [keys.map((k) => String(r[k])).join('|'), r]));
  let lost = 0;
  let over = 0;
  for (const key of new Set([...expected.keys(), ...actual.keys()])) {
    const want = expected.get(key) ?? {};
    const got = actual.get(key) ?? {};
    for (const c of new Set([...Object.keys(want), ...Object.keys(got)])) {
      if (keys.includes(c)) continue;
      const d = Number(got[c] ?? 0) - Number(want[c] ?? 0);
      if (d < 0) lost -= d;
      else over += d;
    }
  }
  return { lost, over };
}
