import type { DeliveryEvent } from '@tern/contracts';
import { encodeRecords } from '@tern/event-log';
import { describe, expect, it } from 'vitest';
import { createPruneJob, deadLetterEvent } from '../src/index.js';
import { dailyFigures, scenario, suffix, visibleRows } from './pipeline.suite.js';
import { projectUntilCaughtUp, tableLogWorld } from './table-log-world.js';

const DAY = 24 * 3600 * 1000;

/**
 * Issue 9, item 7: the Postgres-table log and `processed_events` (since migration 0095 the claims of
 * dead-lettered events only; folded ids are claimed by their timeline rows) are pruned past the
 * dedup window.
 */
describe('prune job: bounded growth, dedup guarantee kept for the window', () => {
  const world = tableLogWorld('prune');
  const group = `prune-${suffix()}`;

  const append = (events: object[]) => world.log.append(encodeRecords(events as DeliveryEvent[]));
  const project = () => projectUntilCaughtUp(world, group, 'catch up');
  const count = async (sql: string, params: unknown[] = []) =>
    (await world.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0]!.n;

  it('prunes what is older than the window and consumed, dead letters too; a duplicate, within the window or after it, changes nothing', async () => {
    const old = `t-old-${suffix()}`;
    const recent = `t-recent-${suffix()}`;
    const pending = `t-pending-${suffix()}`;
    // A dead-lettered event of each tenant: its id is claimed in processed_events, its record
    // kept in dead_letters.
    const poison = (tenantId: string) => {
      const event = {
        id: `poison-${tenantId}`,
        type: 'email.opened' as const,
        tenantId,
        emailId: 'em_poison',
        occurredAt: new Date().toISOString(),
        data: {},
      };
      return deadLetterEvent(world.pool, event, [{ payload: JSON.stringify(event), reason: 'test poison' }]);
    };
    await append(scenario(old));
    await project();
    await poison(old);
    // Ten days pass for the old tenant's claims and records.
    await world.pool.query(
      `UPDATE processed_events SET processed_at = now() - interval '10 days' WHERE tenant_id = $1`,
      [old],
    );
    await world.pool.query(`UPDATE event_log SET appended_at = now() - interval '10 days'`);
    await world.pool.query(
      `UPDATE dead_letters SET created_at = now() - interval '10 days' WHERE payload LIKE $1`,
      [`%${old}%`],
    );
    await append(scenario(recent));
    await project();
    await poison(recent);
    // Old but never consumed by the projector group: must survive any pruning.
    const consumedUpTo = (await world.pool.query('SELECT max(seq)::int AS s FROM event_log')).rows[0]
      .s as number;
    await append(scenario(pending));
    await world.pool.query(`UPDATE event_log SET appended_at = now() - interval '10 days' WHERE seq > $1`, [
      consumedUpTo,
    ]);

    const events = scenario(old).length;
    const job = createPruneJob({
      pool: world.pool,
      group,
      dedupWindowMs: 7 * DAY,
      eventLogTable: 'event_log',
      batchSize: 5,
    });
    expect(await job.runOnce()).toEqual({
      processedEvents: 1,
      eventLog: events,
      deadLetters: 1,
      softBounces: 0,
    });
    expect(await count('processed_events WHERE tenant_id = $1', [old])).toBe(0);
    expect(await count('processed_events WHERE tenant_id = $1', [recent])).toBe(1);
    expect(await count('dead_letters WHERE payload LIKE $1', [`%${old}%`])).toBe(0);
    expect(await count('dead_letters WHERE payload LIKE $1', [`%${recent}%`])).toBe(1);
    expect(await count('event_log')).toBe(2 * events); // recent (young) + pending (unconsumed)
    expect(await job.runOnce()).toEqual({ processedEvents: 0, eventLog: 0, deadLetters: 0, softBounces: 0 });

    // The events of both tenants delivered again change nothing: the old tenant's are past the
    // window but still claimed by their timeline rows, which live as long as their emails.
    for (const tenant of [recent, old]) {
      const rows = await visibleRows(world.pool, tenant);
      const figures = await dailyFigures(world.ch.client, tenant);
      await append(scenario(tenant));
      await project();
      expect(await visibleRows(world.pool, tenant)).toEqual(rows);
      expect(await dailyFigures(world.ch.client, tenant)).toEqual(figures);
    }
    // And the pending records were projected after the prune: nothing was lost.
    expect(await visibleRows(world.pool, pending)).toHaveLength(5);
  });
});
