// What a tenant configures: its settings (`tenant_settings`), projects (`projects`) and API keys
// (`api_keys`); what the api's routes, the sender and the worker's retention read and write of
// them, named (no module's every export is public by accident).

export {
  type ActiveApiKey,
  type ApiKeyRecord,
  type ApiKeyStore,
  type ApiKeyStoreOptions,
  createApiKeyStore,
} from './api-keys.js';
export {
  cappedRate,
  createTenantSettingsCache,
  type SenderTenantSettings,
  type TenantSettingsCache,
} from './cache.js';
export {
  createProjectStore,
  deleteProject,
  getProject,
  insertProject,
  listProjects,
  type ProjectStore,
  renameProject,
} from './projects.js';
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
