import { runStreamOrderSuite } from './event-stream-order.suite.js';
import { openPostgresTableLog } from './pipeline.suite.js';

runStreamOrderSuite('the Postgres-table log', {
  storesName: 'stream-order-pg',
  openLog: openPostgresTableLog,
  sameGroup: false,
});
