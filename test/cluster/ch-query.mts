/**
 * One query against one embedded ClickHouse data directory, answered as JSON rows on stdout:
 * chDB binds one data directory per process, so the cluster suite reads each projector
 * process's engine in a child of its own (projections.ts).
 * Usage: tsx test/cluster/ch-query.mts <dataDir> '<{"query":…,"query_params":…}>'
 */
import { createClickHouse } from '@tern/stores';

const [dataDir, request] = process.argv.slice(2);
if (!dataDir || !request) throw new Error('usage: ch-query.mts <dataDir> <json request>');
const ch = createClickHouse({ dataDir });
try {
  const answer = await ch.client.query({ ...JSON.parse(request), format: 'JSONEachRow' });
  process.stdout.write(JSON.stringify(await answer.json()));
} finally {
  await ch.close();
}
