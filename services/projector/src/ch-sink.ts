// The daily analytics read model (ClickHouse rollups and their Postgres outbox) lives in
// packages/read-models; the projector ships with it.
export {
  completeOutbox,
  DAILY_TABLE,
  MACHINE_DAILY_TABLE,
  PROJECT_DAILY_TABLE,
  type ShipFn,
  shipBatch,
  shipPendingOutbox,
} from '@tern/read-models';
