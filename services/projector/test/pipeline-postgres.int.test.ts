import { createPostgresEventLog } from '@tern/event-log';
import { runPipelineSuite } from './pipeline.suite.js';

runPipelineSuite('Postgres table', async (pool) => {
  const log = createPostgresEventLog({ pool, pollIntervalMs: 20 });
  await log.ensureSchema();
  return log;
});
