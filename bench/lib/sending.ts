/**
 * What the sending benches share (send, smtp-in, smtp-out, campaigns, feedback): a JSON POST that
 * must answer an expected status, and the count of a tenant's emails the projection shows
 * DELIVERED, with the poll that waits for it.
 */
import type pg from 'pg';
import { pollUntil } from './services.js';

/** POSTs `body` as JSON; throws unless the answer's status is one of `expected` (default 202). */
export async function postJson<T = { id?: string; data?: { id: string }[] }>(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  expected: readonly number[] = [202],
): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!expected.includes(res.status)) throw new Error(`${url} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

/**
 * The tenant's emails (all, or those of `ids`) whose log entry is DELIVERED. All of them: the sum of
 * the log's counters over the tenant's days (what the logs page totals, kept by the projector in
 * the transaction that changes the rows). Not `count(*)` over the tenant's rows: at 100 000 emails
 * that count took tens of milliseconds, and polled every 50 ms it was the busiest statement of a
 * campaign run (a quarter of the sampled Postgres work), a load on the thing measured.
 */
export async function deliveredCount(
  pool: pg.Pool,
  tenantId: string,
  ids: readonly string[] | null = null,
): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    ids === null
      ? `SELECT coalesce(sum(n), 0) AS n FROM email_log_counts
          WHERE tenant_id = $1 AND project_id = '' AND status = 'DELIVERED'`
      : `SELECT count(*) AS n FROM email_logs WHERE tenant_id = $1 AND id = ANY($2::text[]) AND status = 'DELIVERED'`,
    ids === null ? [tenantId] : [tenantId, ids],
  );
  return Number(rows[0]?.n ?? 0);
}

/** Polls until at least `count` of the tenant's emails (of `ids`, or all) are DELIVERED; false on timeout. */
export function waitDelivered(
  pool: pg.Pool,
  tenantId: string,
  ids: readonly string[] | null,
  count: number,
  opts: { intervalMs?: number; timeoutMs?: number } = {},
): Promise<boolean> {
  return pollUntil(async () => (await deliveredCount(pool, tenantId, ids)) >= count, {
    intervalMs: opts.intervalMs ?? 5,
    timeoutMs: opts.timeoutMs ?? 120_000,
  });
}
