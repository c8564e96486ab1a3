import { LRUCache } from 'lru-cache';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the route's requests are not counted (the tracking pixel, click links). */
    rateLimit?: false;
  }
}

/** What counting one request found: the requests of its key in the window, and when it ends. */
export interface LimiterHit {
  /** Requests of the key in the current window, this one included. */
  current: number;
  /** Seconds until the window ends (rounded up). */
  resetSeconds: number;
}

/**
 * Requests per key in fixed windows, in memory (issue 29): the counting `@fastify/rate-limit`'s
 * local store did — a window opens with a key's first request and lasts `timeWindowMs`, the
 * `maxKeys` least recently seen keys are kept (5000, its default) — synchronously, so a request
 * pays no promise for it. The hook that answers (headers, 429) is in `api-routes.ts`.
 */
export function createRequestLimiter(
  limit: { timeWindowMs: number },
  opts: { maxKeys?: number; now?: () => number } = {},
) {
  const windows = new LRUCache<string, { count: number; startedAt: number }>({ max: opts.maxKeys ?? 5000 });
  const now = opts.now ?? Date.now;
  return {
    hit(key: string): LimiterHit {
      const t = now();
      let window = windows.get(key);
      if (window === undefined || window.startedAt + limit.timeWindowMs <= t) {
        window = { count: 1, startedAt: t };
        windows.set(key, window);
      } else window.count++;
      return {
        current: window.count,
        resetSeconds: Math.ceil((limit.timeWindowMs - (t - window.startedAt)) / 1000),
      };
    },
  };
}
