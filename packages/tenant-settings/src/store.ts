import type { TrackingSettings } from '@tern/contracts';
import type pg from 'pg';
import {
  getRetentionOverride,
  getSendRate,
  getTimeZone,
  getTracking,
  setRetentionOverride,
  setSendRate,
  setTimeZone,
  setTracking,
} from './tenant-settings.js';

/**
 * A tenant's own settings (SPEC §9 retention, §21 tracking, §23 send rate) as the api's routes read
 * and write them, over one pool: the plain functions of `tenant-settings.ts` with the pool bound
 * (they stay exported for the sender and the worker). `null` is the server default.
 */
export interface TenantSettingsStore {
  getRetention(tenantId: string): Promise<number | null>;
  /** Also tells every api process of the new retention when it commits (`setRetentionOverride`). */
  setRetention(tenantId: string, retentionDays: number | null, at: Date): Promise<void>;
  getTracking(tenantId: string): Promise<TrackingSettings>;
  /** Merges the given fields; one left out keeps its value. */
  setTracking(tenantId: string, tracking: Partial<TrackingSettings>, at: Date): Promise<void>;
  getSendRate(tenantId: string): Promise<number | null>;
  setSendRate(tenantId: string, sendRatePerSecond: number | null, at: Date): Promise<void>;
  /** The IANA time zone of analytics days and hours (SPEC §26); null = UTC. */
  getTimeZone(tenantId: string): Promise<string | null>;
  setTimeZone(tenantId: string, timeZone: string | null, at: Date): Promise<void>;
}

export function createTenantSettingsStore(pool: pg.Pool): TenantSettingsStore {
  return {
    getRetention: (tenantId) => getRetentionOverride(pool, tenantId),
    setRetention: (tenantId, retentionDays, at) => setRetentionOverride(pool, tenantId, retentionDays, at),
    getTracking: (tenantId) => getTracking(pool, tenantId),
    setTracking: (tenantId, tracking, at) => setTracking(pool, tenantId, tracking, at),
    getSendRate: (tenantId) => getSendRate(pool, tenantId),
    setSendRate: (tenantId, rate, at) => setSendRate(pool, tenantId, rate, at),
    getTimeZone: (tenantId) => getTimeZone(pool, tenantId),
    setTimeZone: (tenantId, timeZone, at) => setTimeZone(pool, tenantId, timeZone, at),
  };
}
