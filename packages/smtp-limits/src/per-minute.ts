/**
 * Counts per client in the current minute (a fixed window: cheap, and its memory bounded by the
 * clients seen in one minute, at most `maxClients`; past that a new client counts as over).
 */
export interface PerMinute {
  /** Adds one for `client`; false when that makes more than `limit` this minute. */
  take(client: string): boolean;
  /** True when `client` already used its `limit` this minute (nothing is added). */
  exceeded(client: string): boolean;
}

export function perMinute(limit: number, now: () => number, maxClients = 100_000): PerMinute {
  let window = Math.floor(now() / 60_000);
  let counts = new Map<string, number>();
  const roll = () => {
    const current = Math.floor(now() / 60_000);
    if (current !== window) {
      window = current;
      counts = new Map();
    }
  };
  return {
    take(client) {
      roll();
      const seen = counts.get(client);
      if (seen === undefined && counts.size >= maxClients) return false;
      const n = (seen ?? 0) + 1;
      counts.set(client, n);
      return n <= limit;
    },
    exceeded(client) {
      roll();
      return (counts.get(client) ?? 0) >= limit;
    },
  };
}
