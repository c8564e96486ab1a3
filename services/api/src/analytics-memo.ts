/**
 * Analytics answers memoised on the projection watermark (issue 10). An answer of ClickHouse is
 * a function of (tenant, query, day range, watermark): the day range already folds in the period,
 * the date and the tenant's retention, and the watermark (`tenantReadContext`) changes with every
 * batch the projector applies. So a repeated dashboard load costs no engine query and is still
 * exact: one event projected in between changes the watermark, hence the key.
 *
 * No memo without a watermark (a batch committed but not yet in ClickHouse). Concurrent equal
 * requests share one engine query. Bounded: the oldest entries go first; stale watermarks are
 * never asked again and age out.
 */
export interface AnalyticsMemo {
  get<T>(key: string, watermark: string | null, compute: () => Promise<T>): Promise<T>;
  /** Entries held (for tests and metrics). */
  readonly size: number;
}

export function createAnalyticsMemo(maxEntries = 5000): AnalyticsMemo {
  const entries = new Map<string, Promise<unknown>>();
  return {
    get<T>(key: string, watermark: string | null, compute: () => Promise<T>): Promise<T> {
      if (watermark === null) return compute();
      const full = `${watermark}\u0000${key}`;
      const hit = entries.get(full);
      if (hit) return hit as Promise<T>;
      const pending = compute();
      entries.set(full, pending);
      // A failure is not an answer: forget it so the next call asks the engine again.
      pending.catch(() => {
        if (entries.get(full) === pending) entries.delete(full);
      });
      if (entries.size > maxEntries) {
        const oldest = entries.keys().next().value;
        if (oldest !== undefined) entries.delete(oldest);
      }
      return pending;
    },
    get size() {
      return entries.size;
    },
  };
}
