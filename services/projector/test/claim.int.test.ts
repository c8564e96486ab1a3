import type { DeliveryEvent } from '@tern/contracts';
import { initialEmailState } from '@tern/domain';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBatchToPostgres, deadLetterEvent } from '../src/index.js';
import { openProjectionStores, type ProjectionStores, suffix } from './pipeline.suite.js';

/**
 * The projector's claim (migration 0095): an event id is folded once per tenant (SPEC §5) because
 * its timeline row, keyed `(tenant_id, event_id)`, is inserted first; a dead-lettered id is
 * claimed in `processed_events`.
 */
describe('claiming event ids through the timeline', () => {
  let stores: ProjectionStores;
  let pool: pg.Pool;
  let batchNo = 0;
  const apply = (events: DeliveryEvent[]) => applyBatchToPostgres(pool, events, [], () => `b${++batchNo}`);
  const queued = (tenantId: string, id: string, emailId: string): DeliveryEvent => ({
    id,
    type: 'email.queued',
    tenantId,
    emailId,
    occurredAt: '2026-11-20T10:00:00.000Z',
    data: { toEmail: `${emailId}@example.com`, subject: 'Hi' },
  });
  const timeline = async (tenantId: string) =>
    (
      await pool.query<{ email_id: string; event_id: string }>(
        'SELECT email_id, event_id FROM email_events WHERE tenant_id = $1 ORDER BY email_id, event_id',
        [tenantId],
      )
    ).rows;
  const visible = async (tenantId: string) =>
    (
      await pool.query<{ id: string }>(
        'SELECT id FROM email_logs WHERE tenant_id = $1 AND created_at IS NOT NULL ORDER BY id',
        [tenantId],
      )
    ).rows.map((r) => r.id);

  beforeAll(async () => {
    stores = await openProjectionStores('claim');
    ({ pool } = stores);
  });
  afterAll(async () => {
    await stores?.close();
  });

  it('an id reused by another email of the tenant counts once; another tenant’s same id counts', async () => {
    const t = `t-claim-${suffix()}`;
    const other = `t-claim-other-${suffix()}`;
    expect((await apply([queued(t, 'x1', 'em_a')])).applied).toBe(1);
    // The same id again, for another email of the same tenant, in a later batch and in one batch.
    expect(await apply([queued(t, 'x1', 'em_b')])).toMatchObject({ applied: 0, duplicates: 1 });
    expect(await apply([queued(t, 'x2', 'em_c'), queued(t, 'x2', 'em_d')])).toMatchObject({
      applied: 1,
      duplicates: 1,
    });
    expect((await apply([queued(other, 'x1', 'em_b')])).applied).toBe(1);
    expect(await visible(t)).toEqual(['em_a', 'em_c']);
    expect(await timeline(t)).toEqual([
      { email_id: 'em_a', event_id: 'x1' },
      { email_id: 'em_c', event_id: 'x2' },
    ]);
    expect(await visible(other)).toEqual(['em_b']);
  });

  it('a new email is inserted once, no placeholder; one a concurrent batch inserted first fails the batch, and its retry folds on top', async () => {
    const t = `t-claim-new-${suffix()}`;
    const versions = async () =>
      (
        await pool.query<{ id: string; version: number; status: string | null }>(
          'SELECT id, version, status FROM email_logs WHERE tenant_id = $1 ORDER BY id',
          [t],
        )
      ).rows;
    await apply([queued(t, 'n1', 'em_new')]);
    expect(await versions()).toEqual([{ id: 'em_new', version: 1, status: 'QUEUED' }]);
    // Another batch (a concurrent projector) holds a new email's row, uncommitted, while this one folds it.
    const rival = await pool.connect();
    try {
      await rival.query('BEGIN');
      await rival.query(
        `INSERT INTO email_logs (tenant_id, id, state, version) VALUES ($1, 'em_race', $2, 1)`,
        [t, JSON.stringify(initialEmailState(t, 'em_race'))],
      );
      const folding = apply([queued(t, 'r1', 'em_race')]).then(
        () => null,
        (error: { code?: string }) => error.code ?? 'no code',
      );
      await new Promise((r) => setTimeout(r, 300));
      await rival.query('COMMIT');
      // The batch saw no row, so it would overwrite the rival's: it fails instead (retried).
      expect(await folding).toBe('40001');
    } finally {
      rival.release();
    }
    expect(await timeline(t)).toEqual([{ email_id: 'em_new', event_id: 'n1' }]);
    await apply([queued(t, 'r1', 'em_race')]);
    expect((await versions()).find((r) => r.id === 'em_race')).toEqual({
      id: 'em_race',
      version: 2,
      status: 'QUEUED',
    });
  });

  it('a dead-lettered id is a known duplicate: a redelivery of it is not folded', async () => {
    const t = `t-claim-dead-${suffix()}`;
    const event = queued(t, 'dead-1', 'em_dead');
    await deadLetterEvent(pool, event, []);
    expect(await apply([event, queued(t, 'live-1', 'em_live')])).toMatchObject({
      applied: 1,
      duplicates: 1,
    });
    expect(await visible(t)).toEqual(['em_live']);
    expect(await timeline(t)).toEqual([{ email_id: 'em_live', event_id: 'live-1' }]);
  });
});
