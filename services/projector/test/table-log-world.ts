// What the projector's poison and prune tests share: projection stores with a Postgres-table log on
// them for one describe block, and a projector run of one group until it has consumed the log.
import { createEventStream, type EventLog } from '@tern/event-log';
import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { waitFor } from '../../../test/support/services.js';
import { createProjector, type ProjectorOptions } from '../src/index.js';
import { openPostgresTableLog, openProjectionStores, type ProjectionStores } from './pipeline.suite.js';

export interface TableLogWorld {
  readonly stores: ProjectionStores;
  readonly pool: pg.Pool;
  readonly ch: ProjectionStores['ch'];
  readonly log: EventLog;
}

/** Opens the world before the block's tests (`name` names its chDB directory), closes it after. */
export function tableLogWorld(name: string): TableLogWorld {
  let opened: { stores: ProjectionStores; log: EventLog } | undefined;
  const get = () => {
    if (!opened) throw new Error(`the ${name} world is not open`);
    return opened;
  };
  beforeAll(async () => {
    const stores = await openProjectionStores(name);
    opened = { stores, log: await openPostgresTableLog(stores.pool) };
  });
  afterAll(async () => {
    await opened?.log.close();
    await opened?.stores.close();
  });
  return {
    get stores() {
      return get().stores;
    },
    get pool() {
      return get().stores.pool;
    },
    get ch() {
      return get().stores.ch;
    },
    get log() {
      return get().log;
    },
  };
}

/** Runs a projector of `group` (20 ms batches) until its lag is 0, then stops it. */
export async function projectUntilCaughtUp(
  world: TableLogWorld,
  group: string,
  description: string,
  options: Pick<ProjectorOptions, 'maxBatchSize' | 'onBatch'> = {},
): Promise<void> {
  const projector = createProjector({
    pool: world.pool,
    ch: world.ch.client,
    log: createEventStream(world.log),
    group,
    maxWaitMs: 20,
    ...options,
  });
  await projector.start();
  try {
    await waitFor(async () => (await world.log.lag(group)) === 0, { description, timeoutMs: 30_000 });
  } finally {
    await projector.stop();
  }
}
