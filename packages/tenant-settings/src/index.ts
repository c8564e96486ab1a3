// The tenant's settings (`tenant_settings`): what the api's routes, the sender and the worker's
// retention read and write of them, named (no module's every export is public by accident).
export {
  cappedRate,
  createTenantSettingsCache,
  type SenderTenantSettings,
  type TenantSettingsCache,
} from './cache.js';
export { createTenantSettingsStore, type TenantSettingsStore } from './store.js';
export {
  getRetentionOverride,
  getSendRate,
  getTracking,
  retentionOverrides,
  setRetentionOverride,
  setSendRate,
  setTracking,
  type TenantReadContext,
  tenantReadContext,
} from './tenant-settings.js';
