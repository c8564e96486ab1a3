import { openPostgresTableLog, runPipelineSuite } from './pipeline.suite.js';

runPipelineSuite('Postgres table', openPostgresTableLog);
