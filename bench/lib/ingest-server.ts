/**
 * One ingest process on the Kafka log, for the multi-process ingest variant:
 *   node --import tsx bench/lib/ingest-server.ts '{"brokers":[…],"topic":"…","token":"…","keysUrl":"…"}'
 * With `keysUrl` (a migrated database) the log seals as servers mode does. Prints {"port":N} once
 * listening on 127.0.0.1; closes on SIGTERM.
 */
import type { AddressInfo } from 'node:net';
import { createEventStream, createKafkaEventLog } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import pg from 'pg';
import { sealedAsRuntime } from './sealing.js';

const arg = process.argv[2];
if (!arg) throw new Error('usage: ingest-server.ts <json options>');
const opts = JSON.parse(arg) as { brokers: string[]; topic: string; token: string; keysUrl?: string };
const log = createKafkaEventLog({ brokers: opts.brokers, topic: opts.topic, partitions: 6 });
await log.ping();
const keys = opts.keysUrl ? new pg.Pool({ connectionString: opts.keysUrl, max: 4 }) : undefined;
keys?.on('error', () => {});
const app = await createIngestApp({
  log: keys ? sealedAsRuntime(log, keys) : createEventStream(log),
  ingestToken: opts.token,
});
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ port: (app.server.address() as AddressInfo).port })}\n`);
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => log.close())
    .then(() => keys?.end())
    .finally(() => process.exit(0));
});
