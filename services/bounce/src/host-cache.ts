/**
 * Remembers whether a host is a bounce host for `ttlMs` (positive and negative answers alike),
 * and shares one lookup among the RCPTs that ask at once: a flood of RCPTs costs one query per
 * host and period, not one per command. At most `maxHosts` entries; past it the oldest go.
 */
export function createHostCache(
  lookup: (host: string) => Promise<boolean>,
  opts: { ttlMs: number; now?: () => number; maxHosts?: number },
) {
  const now = opts.now ?? Date.now;
  const maxHosts = opts.maxHosts ?? 10_000;
  const entries = new Map<string, { at: number; answer: Promise<boolean> }>();
  return {
    get(host: string): Promise<boolean> {
      const hit = entries.get(host);
      if (hit && now() - hit.at < opts.ttlMs) return hit.answer;
      const answer = lookup(host);
      entries.delete(host);
      entries.set(host, { at: now(), answer });
      // A failed lookup is not remembered: the next RCPT asks again.
      answer.catch(() => {
        if (entries.get(host)?.answer === answer) entries.delete(host);
      });
      while (entries.size > maxHosts) entries.delete(entries.keys().next().value as string);
      return answer;
    },
  };
}
