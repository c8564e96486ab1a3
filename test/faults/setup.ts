import { migratePostgres } from '@tern/stores';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { buildTern } from '../e2e/tern-process.js';
import { createFreshDatabase } from '../support/services.js';
import { type DedicatedKafka, startDedicatedKafka } from './servers.js';

/** The logger of the in-process projector and logs: silent, or warnings and errors printed with FAULTS_DEBUG. */
export const quiet = process.env.FAULTS_DEBUG
  ? {
      info() {},
      warn: (o: object, m?: string) => console.log('WARN', m, JSON.stringify(o).slice(0, 300)),
      error: (o: object, m?: string) => console.log('ERROR', m, JSON.stringify(o).slice(0, 300)),
    }
  : { info() {}, warn() {}, error() {} };

export interface FaultServers {
  db: { url: string; drop(): Promise<void> };
  /** A pool on `db` whose idle clients' errors are dropped: the faults cut its connections. */
  pool: pg.Pool;
  /** With `broker`: a Kafka broker of the test's own (the shared one is untouched). */
  broker: DedicatedKafka;
}

/**
 * The servers of a fault test's `describe`: a fresh database with a small pool on it and, with
 * `broker`, a Kafka broker of the test's own, started before all its tests (the built `tern`
 * first when `build`; the Postgres schema applied when `migrate`) and gone after them. The
 * fields are set once `beforeAll` has run: a test reads them in its body.
 */
export function faultServers(
  opts: { build?: boolean; broker?: boolean; migrate?: boolean; poolMax?: number } = {},
): FaultServers {
  const servers = {} as FaultServers;
  beforeAll(async () => {
    if (opts.build) buildTern();
    const [broker, db] = await Promise.all([
      opts.broker ? startDedicatedKafka() : undefined,
      createFreshDatabase(),
    ]);
    if (broker) servers.broker = broker;
    servers.db = db;
    servers.pool = new pg.Pool({ connectionString: db.url, max: opts.poolMax ?? 2 });
    servers.pool.on('error', () => undefined);
    if (opts.migrate) await migratePostgres(servers.pool);
  }, 240_000);
  afterAll(async () => {
    await servers.pool?.end();
    await servers.db?.drop();
    await servers.broker?.destroy();
  }, 120_000);
  return servers;
}
