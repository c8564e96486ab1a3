export {
  AUTOVACUUM_NAPTIME_MS,
  type Autovacuum,
  type AutovacuumDue,
  type AutovacuumOptions,
  type AutovacuumRun,
  autovacuumDue,
  type CarriedCounts,
  createAutovacuum,
  runAutovacuum,
  type TableCounts,
} from './autovacuum.js';
export {
  ChdbPathConflictError,
  type ClickHouseKind,
  type ClickHouseStore,
  type CreateClickHouseOptions,
  createClickHouse,
} from './clickhouse.js';
export { DataDirLockedError } from './data-dir-lock.js';
export {
  classifyStoreError,
  isUnstorableCharacterError,
  PARTITION_WINDOW_SUFFIX,
  type StoreErrorClass,
} from './errors.js';
export {
  boundHeapGrowth,
  type ReleasedMemory,
  releaseIdleMemory,
  rssKiB,
} from './memory.js';
export {
  DEFAULT_CLICKHOUSE_MIGRATIONS_DIR,
  DEFAULT_POSTGRES_MIGRATIONS_DIR,
  type Migration,
  MigrationError,
  type MigrationResult,
  migrateClickHouse,
  migratePostgres,
  readMigrations,
  splitClickHouseStatements,
} from './migrations.js';
export {
  type CreatePostgresOptions,
  createPostgres,
  type PostgresKind,
  type PostgresStore,
} from './postgres.js';
export { preparedName } from './prepared.js';
export {
  createReadModelFeed,
  notifyReadModel,
  READ_MODEL_APPLICATION_NAME,
  READ_MODEL_CHANNEL,
  READ_MODEL_KINDS,
  type ReadModelChange,
  type ReadModelFeed,
  type ReadModelFeedOptions,
  type ReadModelKind,
  readModelPayload,
} from './read-model-feed.js';
