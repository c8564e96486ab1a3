import { LRUCache } from 'lru-cache';

/**
 * Answers memoised on a version of the data they read (issue 10). An answer is a function of
 * (tenant, query, version): the query folds in the period, the date and the tenant's retention, and
 * the version changes whenever the data may have changed — the projection watermark of
 * `tenantReadContext`, or a `ReadModelFeed` token (`read-context.ts`). So a repeated read costs no
 * query and is still exact: a change in between moves the version, hence the key.
 *
 * No memo without a version (`null`: a change could go unheard). Concurrent equal requests share
 * one computation; a failure is not an answer and is forgotten. Bounded by entries and, when
 * `sizeOf` is given, by bytes: the least recently used go first; stale versions are never asked
 * again and age out.
 */
export interface ReadMemo<T> {
  get<U extends T>(key: string, version: string | null, compute: () => Promise<U>): Promise<U>;
  /** The answer already computed for (key, version), without computing it. */
  peek(key: string, version: string | null): T | undefined;
  /** Entries held, computed or in flight (for tests and metrics). */
  readonly size: number;
}

export interface ReadMemoOptions<T> {
  maxEntries: number;
  /** With `sizeOf`: the most the computed answers may weigh together. */
  maxBytes?: number;
  sizeOf?: (value: T) => number;
}

export function createReadMemo<T>(opts: ReadMemoOptions<T>): ReadMemo<T> {
  const { sizeOf, maxBytes } = opts;
  const done = new LRUCache<string, { value: T }>({
    max: opts.maxEntries,
    ...(sizeOf && maxBytes
      ? { maxSize: maxBytes, sizeCalculation: (entry, key) => Math.max(1, sizeOf(entry.value) + key.length) }
      : {}),
  });
  const inFlight = new Map<string, Promise<T>>();
  return {
    get<U extends T>(key: string, version: string | null, compute: () => Promise<U>): Promise<U> {
      if (version === null) return compute();
      const full = `${version}\u0000${key}`;
      const hit = done.get(full);
      if (hit) return Promise.resolve(hit.value as U);
      const running = inFlight.get(full);
      if (running) return running as Promise<U>;
      const pending = compute();
      inFlight.set(full, pending);
      pending.then(
        (value) => {
          inFlight.delete(full);
          done.set(full, { value });
        },
        () => inFlight.delete(full),
      );
      return pending;
    },
    peek(key, version) {
      return version === null ? undefined : done.get(`${version}\u0000${key}`)?.value;
    },
    get size() {
      return done.size + inFlight.size;
    },
  };
}
