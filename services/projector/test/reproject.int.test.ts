import { openPostgresTableLog } from './pipeline.suite.js';
import { runReprojectSuite } from './reproject.suite.js';

runReprojectSuite('Postgres table', openPostgresTableLog);
