import { DEFAULT_TRACKING, type TrackingSettings } from '@tern/contracts';
import type pg from 'pg';

/** What the sender reads of a tenant's settings (SPEC §21, §23). */
export interface SenderTenantSettings {
  /** Emails per second at most (the tenant's `sendRatePerSecond`, else the server default); 0: unlimited. */
  rate: number;
  tracking: TrackingSettings;
}

/**
 * A send rate under the operator's ceiling (issue 40 item 9): `rate` (0 = unlimited) at most `max`
 * (0 = no ceiling). A tenant's rate stored before the ceiling, or above a lowered one, applies at the ceiling.
 */
export const cappedRate = (rate: number, max: number): number =>
  max > 0 ? (rate > 0 ? Math.min(rate, max) : max) : rate;

export interface TenantSettingsCache {
  /** The settings of these tenants: the ones read less than `ttlMs` ago from memory, the others in one query. */
  of(tenants: readonly string[]): Promise<Map<string, SenderTenantSettings>>;
}

/**
 * The sender's view of `tenant_settings`, one query per claim round at most and none while every
 * tenant of the round was read in the last `ttlMs` (default 1 s, like the API key cache): a changed
 * setting applies to mail handed over at most that long after the change. At most `maxEntries`
 * tenants are kept; past that the cache starts over.
 */
export function createTenantSettingsCache(opts: {
  pool: pg.Pool;
  defaultRate: number;
  /** The operator's ceiling (SEND_RATE_MAX_PER_SECOND, issue 40 item 9); 0 or absent: none. */
  maxRate?: number;
  ttlMs?: number;
  maxEntries?: number;
  /** Monotonic milliseconds (default `performance.now`). */
  clock?: () => number;
}): TenantSettingsCache {
  const ttlMs = opts.ttlMs ?? 1000;
  const maxEntries = opts.maxEntries ?? 10_000;
  const clock = opts.clock ?? (() => performance.now());
  const cache = new Map<string, { at: number; value: SenderTenantSettings }>();
  return {
    async of(tenants) {
      const out = new Map<string, SenderTenantSettings>();
      const at = clock();
      const missing: string[] = [];
      for (const t of new Set(tenants)) {
        const hit = cache.get(t);
        if (hit && at - hit.at < ttlMs) out.set(t, hit.value);
        else missing.push(t);
      }
      if (missing.length === 0) return out;
      const { rows } = await opts.pool.query<{
        tenant_id: string;
        rate: number;
        opens: boolean | null;
        clicks: boolean | null;
      }>(
        `SELECT t.tenant_id, COALESCE(s.send_rate_per_second, $2::int) AS rate,
                s.tracking_opens AS opens, s.tracking_clicks AS clicks
           FROM unnest($1::text[]) AS t(tenant_id)
           LEFT JOIN tenant_settings s ON s.tenant_id = t.tenant_id`,
        [missing, opts.defaultRate],
      );
      if (cache.size + rows.length > maxEntries) cache.clear();
      for (const r of rows) {
        const value: SenderTenantSettings = {
          rate: cappedRate(r.rate, opts.maxRate ?? 0),
          tracking: { opens: r.opens ?? DEFAULT_TRACKING.opens, clicks: r.clicks ?? DEFAULT_TRACKING.clicks },
        };
        cache.set(r.tenant_id, { at, value });
        out.set(r.tenant_id, value);
      }
      return out;
    },
  };
}
