import { createEventStream } from '@tern/event-log';
import { classifyStoreError } from '@tern/stores';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/services.js';
import { createProjector } from '../src/index.js';
import { dailyFigures, scenario, suffix, visibleRows } from './pipeline.suite.js';
import { projectUntilCaughtUp, tableLogWorld } from './table-log-world.js';

/**
 * Issue 9, item 1: one event no store can hold must never stall the projector. Records are
 * appended straight to the log (as a producer bypassing ingest validation, or an older
 * version's log, would) between good events of two tenants.
 */
describe('poison events: isolated, dead-lettered, and the projector goes on', () => {
  const world = tableLogWorld('poison');

  const append = (events: object[]) =>
    world.log.append(
      events.map((e) => ({
        key: String((e as { emailId?: string }).emailId ?? 'x'),
        value: JSON.stringify(e),
      })),
    );
  const deadLetters = async (like: string) =>
    (
      await world.pool.query<{ reason: string; payload: string }>(
        'SELECT reason, payload FROM dead_letters WHERE payload LIKE $1 ORDER BY id',
        [like],
      )
    ).rows;

  it('U+0000, a lone surrogate and year 0000 between good events of two tenants: good ones visible, bad ones dead-lettered', async () => {
    const a = `t-a-${suffix()}`;
    const b = `t-b-${suffix()}`;
    const poison = [
      {
        id: 'p-nul',
        type: 'email.queued',
        tenantId: a,
        emailId: 'pn',
        occurredAt: '2026-11-01T10:00:00Z',
        data: { toEmail: 'x@example.com', subject: 'a\u0000b' },
      },
      {
        id: 'p-sur',
        type: 'email.failed',
        tenantId: b,
        emailId: 'ps',
        occurredAt: '2026-11-01T10:00:00Z',
        data: { reason: 'bad \ud800' },
      },
      {
        id: 'p-old',
        type: 'email.delivered',
        tenantId: a,
        emailId: 'po',
        occurredAt: '0000-01-01T00:00:00Z',
      },
    ];
    await append([
      ...scenario(a).slice(0, 9),
      poison[0]!,
      ...scenario(b).slice(0, 9),
      poison[1]!,
      poison[2]!,
    ]);
    await append([...scenario(a).slice(9), ...scenario(b).slice(9)]);
    const group = `poison-${suffix()}`;
    await projectUntilCaughtUp(world, group, 'projector to pass the poison', { maxBatchSize: 50 });
    expect((await visibleRows(world.pool, a)).map((r) => r.id)).toEqual(['e1', 'e2', 'e3', 'e5', 'e6']);
    expect((await visibleRows(world.pool, b)).map((r) => r.id)).toEqual(['e1', 'e2', 'e3', 'e5', 'e6']);
    const figures = await dailyFigures(world.ch.client, a);
    expect(figures.reduce((n, r) => n + Number(r.total), 0)).toBe(5);
    expect(await dailyFigures(world.ch.client, b)).toEqual(figures);
    const nul = await deadLetters('%p-nul%');
    expect(nul).toHaveLength(1);
    expect(nul[0]!.reason).toMatch(/data\.subject: subject must not contain the control character U\+0000/);
    expect(nul[0]!.payload).toContain('\\u0000'); // the escape survives as text, never a NUL
    expect((await deadLetters('%p-sur%'))[0]?.reason).toMatch(/data\.reason: .*lone UTF-16 surrogate/);
    expect((await deadLetters('%p-old%'))[0]?.reason).toMatch(
      /occurredAt: occurredAt must be between 1970-01-01/,
    );
  });

  it('an event Postgres refuses (class 22) is split out of its batch and dead-lettered; the rest is applied once', async () => {
    const t = `t-refuse-${suffix()}`;
    // The real Postgres refusing one value, as it does for data it cannot store.
    await world.pool.query(`
      CREATE OR REPLACE FUNCTION poison_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.subject = 'refuse-me' THEN RAISE EXCEPTION 'value refused by the store' USING ERRCODE = '22023'; END IF;
        RETURN NEW;
      END $$;
      DROP TRIGGER IF EXISTS poison_refuse ON email_logs;
      CREATE TRIGGER poison_refuse BEFORE INSERT OR UPDATE ON email_logs FOR EACH ROW EXECUTE FUNCTION poison_refuse();`);
    try {
      const bad = {
        id: 'refused',
        type: 'email.queued',
        tenantId: t,
        emailId: 'bad',
        occurredAt: '2026-11-01T09:00:00Z',
        data: { toEmail: 'r@example.com', subject: 'refuse-me' },
      };
      const events = scenario(t);
      await append([...events.slice(0, 8), bad, ...events.slice(8)]);
      const group = `refuse-${suffix()}`;
      let deadLettered = 0;
      await projectUntilCaughtUp(world, group, 'projector to pass the refused event', {
        maxBatchSize: 1000,
        onBatch: (s) => {
          deadLettered += s.deadLettered;
        },
      });
      // The earlier case's three poison records are in the same log: this new group meets them too.
      expect(deadLettered).toBe(4);
      expect((await visibleRows(world.pool, t)).map((r) => r.id)).toEqual(['e1', 'e2', 'e3', 'e5', 'e6']);
      const letters = await deadLetters('%"refused"%');
      expect(letters).toHaveLength(1);
      expect(letters[0]!.reason).toBe('Postgres refused it (22023): value refused by the store');
      // Its id is claimed: a redelivery is a known duplicate, not a second dead letter.
      const claimed = await world.pool.query(
        'SELECT 1 FROM processed_events WHERE tenant_id = $1 AND event_id = $2',
        [t, 'refused'],
      );
      expect(claimed.rowCount).toBe(1);
      const figures = await dailyFigures(world.ch.client, t);
      expect(figures.reduce((n, r) => n + Number(r.total), 0)).toBe(5);
    } finally {
      await world.pool.query('DROP TRIGGER IF EXISTS poison_refuse ON email_logs');
    }
  });

  it('stalled() names the reason when no batch succeeds for stallAfterMs while lag > 0, and clears on progress', async () => {
    let failing = true;
    const flaky = new Proxy(world.ch.client, {
      get(target, prop, receiver) {
        if (prop === 'insert' && failing) {
          return async () => {
            throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const t = `t-stall-${suffix()}`;
    const group = `stall-${suffix()}`;
    const projector = createProjector({
      pool: world.pool,
      ch: flaky,
      log: createEventStream(world.log),
      group,
      maxWaitMs: 20,
      stallAfterMs: 300,
      retry: { initialMs: 20, maxMs: 50 },
    });
    await projector.start();
    try {
      expect(await projector.stalled()).toBeNull();
      await append(scenario(t));
      const reason = await waitFor(async () => (await projector.stalled()) ?? undefined, {
        description: 'stall to be reported',
        timeoutMs: 10_000,
      });
      expect(reason).toMatch(
        /^projector stalled: (a batch has failed for [\d.]+ s \(ECONNRESET socket hang up\)|no progress for [\d.]+ s with lag \d+)$/,
      );
      failing = false;
      await waitFor(async () => (await world.log.lag(group)) === 0, {
        description: 'recovery',
        timeoutMs: 30_000,
      });
      expect(await projector.stalled()).toBeNull();
    } finally {
      await projector.stop();
    }
  });

  it('classifies data errors as permanent and connection errors as transient', () => {
    expect(classifyStoreError({ code: '22021' })).toBe('data');
    expect(classifyStoreError({ code: '23505' })).toBe('data');
    expect(classifyStoreError({ code: '22P05' })).toBe('data');
    expect(classifyStoreError({ code: '08006' })).toBe('unavailable');
    expect(classifyStoreError({ code: '57P01' })).toBe('unavailable');
    expect(classifyStoreError({ code: 'ECONNRESET' })).toBe('unavailable');
    expect(classifyStoreError({ code: '27', message: 'Cannot parse input' })).toBe('data');
  });
});
