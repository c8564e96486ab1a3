import type { ReadModelChange, ReadModelFeed } from '@tern/stores';
import { getRetentionOverride, type TenantReadContext, tenantReadContext } from '@tern/tenant-settings';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';

/** A tenant's read context, and the versions its answers may be memoised on. */
export interface ReadContext extends TenantReadContext {
  /**
   * Changes whenever the tenant's log entries may have changed (`ReadModelFeed`), or null: then a
   * logs page is read from Postgres every time.
   */
  logsVersion: string | null;
}

/**
 * What every read of a tenant needs besides its data (retention, freshness, memo versions). With a
 * listening `ReadModelFeed` this costs no query once the tenant's retention is known: the feed hears
 * every change of the read models and of the tenant's settings. Without one (or while it does not
 * listen) it is one query (`tenantReadContext`) and logs pages are not memoised.
 */
export interface ReadContexts {
  get(tenantId: string): Promise<ReadContext>;
  /** This process committed a change (its notice reaches the other processes): seen here at once. */
  changed(change: ReadModelChange): void;
  /** A token that moves whenever the tenant's log read models may have changed; null: not listening. */
  version(tenantId: string): string | null;
}

export function createReadContexts(pool: pg.Pool, feed?: ReadModelFeed): ReadContexts {
  // The retention override per tenant, with the settings version it was read under.
  const retention = new LRUCache<string, { version: string; days: number | null }>({ max: 10_000 });
  return {
    async get(tenantId) {
      const logsVersion = feed?.version('logs', tenantId) ?? null;
      const settings = feed?.version('settings', tenantId) ?? null;
      const analytics = feed?.version('analytics', tenantId) ?? null;
      if (feed === undefined || logsVersion === null || settings === null || analytics === null) {
        return { ...(await tenantReadContext(pool, tenantId)), logsVersion: null };
      }
      let known = retention.get(tenantId);
      if (known?.version !== settings) {
        // Read under the version seen BEFORE the read: a change heard meanwhile moves the version,
        // so this value is never taken for the newer one.
        known = { version: settings, days: await getRetentionOverride(pool, tenantId) };
        retention.set(tenantId, known);
      }
      return {
        retentionOverride: known.days,
        asOf: feed.asOf(),
        // `f` keeps these apart from the database watermarks of `tenantReadContext`.
        watermark: `f${analytics}`,
        logsVersion,
      };
    },
    changed(change) {
      feed?.changed(change);
    },
    version(tenantId) {
      return feed?.version('logs', tenantId) ?? null;
    },
  };
}
