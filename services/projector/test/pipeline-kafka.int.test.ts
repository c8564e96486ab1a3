import { openKafkaLog, runPipelineSuite } from './pipeline.suite.js';

runPipelineSuite('Kafka', () => openKafkaLog('pipeline', 3));
