// `email_logs.state` keeps only what no column of its row holds (issue 45 item 2), on a Postgres
// server and on PGlite: every fold state written in one or two batches reads back whole (the
// projector's `lockEmails`, the dispatcher's `emailViewsAt` and claim relation, the detail's
// `emailLogRowSql`); a state stored whole, as before, reads the same; an erased recipient leaves
// no address in the row.
import type { DeliveryEvent } from '@tern/contracts';
import { type EmailState, emailKey, foldBatch, groupByEmail, initialEmailState } from '@tern/domain';
import { withTransaction } from '@tern/kernel';
import fc from 'fast-check';
import type pg from 'pg';
import { expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import { distinctEventsArb } from '../../domain/test/arbitraries.js';
import {
  emailLog,
  emailLogRowSql,
  emailViewsAt,
  lockEmails,
  logRows,
  projectedEmailStateSql,
  viewAt,
} from '../src/index.js';

const EMAILS = ['em_a', 'em_b', 'em_c'];

/** Folds `events` onto what the table holds and writes them, as the projector does. */
async function project(db: pg.Pool, events: readonly DeliveryEvent[]): Promise<Map<string, EmailState>> {
  return withTransaction(db, async (client) => {
    const groups = groupByEmail(events);
    const before = await lockEmails(client, groups);
    const folded = foldBatch(groups, (t, e) => before.get(emailKey(t, e)) ?? null);
    await emailLog.apply!(client, { folded } as Parameters<NonNullable<typeof emailLog.apply>>[1]);
    return new Map(folded.emails.map((e) => [emailKey(e.tenantId, e.emailId), e.after]));
  });
}

async function storedStates(db: pg.Pool, tenantId: string) {
  const locked = await withTransaction(db, (c) =>
    lockEmails(
      c,
      EMAILS.map((emailId) => ({ tenantId, emailId })),
    ),
  );
  const claimRelation = await db.query<{ id: string; state: EmailState }>(
    `SELECT id, state FROM ${projectedEmailStateSql} l WHERE tenant_id = $1`,
    [tenantId],
  );
  const detail = await db.query<{ id: string; state: EmailState }>(
    `SELECT id, state FROM ${emailLogRowSql} l WHERE tenant_id = $1`,
    [tenantId],
  );
  return { locked, claimRelation: claimRelation.rows, detail: detail.rows };
}

onEveryPostgres('email_logs.state holds what no column does', (db) => {
  let run = 0;
  it('every fold state, written in one or two batches, reads back whole by each reader', async () => {
    await fc.assert(
      fc.asyncProperty(distinctEventsArb(['t'], EMAILS, 14), fc.nat(14), async (events, cut) => {
        const tenantId = `state-prop-${run++}`;
        const mine = events.map((e) => ({ ...e, tenantId }));
        // Each email's state is the one of the last batch that folded it.
        const expected = new Map([
          ...(await project(db(), mine.slice(0, cut))),
          ...(await project(db(), mine.slice(cut))),
        ]);
        const { locked, claimRelation, detail } = await storedStates(db(), tenantId);
        expect(Object.fromEntries(locked)).toEqual(Object.fromEntries(expected));
        for (const r of claimRelation) expect(r.state).toEqual(expected.get(emailKey(tenantId, r.id)));
        expect(claimRelation).toHaveLength(expected.size);
        // The detail lists visible emails only (queued known).
        const visible = [...expected.values()].filter((s) => s.queued !== null);
        expect(detail.map((r) => r.state).sort((a, b) => (a.emailId < b.emailId ? -1 : 1))).toEqual(
          visible.sort((a, b) => (a.emailId < b.emailId ? -1 : 1)),
        );
        // The webhook view of each event is the one of the whole state.
        const views = await emailViewsAt(db(), mine);
        for (const e of mine)
          expect(views.get(emailKey(tenantId, e.id))).toEqual(
            viewAt(expected.get(emailKey(tenantId, e.emailId)) ?? null, e),
          );
      }),
      { numRuns: 40 },
    );
  });

  it('stores a queued, sent email without what its columns hold, and a state stored whole reads the same', async () => {
    const tenantId = 'state-narrow';
    const at = '2026-05-01T08:00:00.000Z';
    const events: DeliveryEvent[] = [
      {
        id: 'em_n:queued',
        type: 'email.queued',
        tenantId,
        emailId: 'em_n',
        occurredAt: at,
        data: { toEmail: 'ann@example.com', subject: 'Receipt 7', tags: ['receipt'], templateId: 'tpl_1' },
      } as DeliveryEvent,
      {
        id: 'em_n:sent',
        type: 'email.sent',
        tenantId,
        emailId: 'em_n',
        occurredAt: '2026-05-01T08:00:01.000Z',
        data: { provider: 'smtp', messageId: '<m7@acme.test>' },
      } as DeliveryEvent,
    ];
    const state = (await project(db(), events)).get(emailKey(tenantId, 'em_n'))!;
    expect(state.queued?.toEmail).toBe('ann@example.com');
    const { rows } = await db().query<{ state: Record<string, unknown>; whole: number; stored: number }>(
      `SELECT state, pg_column_size(state) AS stored, pg_column_size($2::jsonb) AS whole
         FROM email_logs WHERE tenant_id = $1 AND id = 'em_n'`,
      [tenantId, JSON.stringify(state)],
    );
    const text = JSON.stringify(rows[0]!.state);
    for (const held of [
      'ann@example.com',
      'Receipt 7',
      'tpl_1',
      '<m7@acme.test>',
      '"smtp"',
      tenantId,
      '"receipt"',
    ])
      expect(text).not.toContain(held);
    expect(rows[0]!.stored).toBeLessThan(rows[0]!.whole * 0.75);

    // A row written before the narrowing holds the whole state: it reads the same.
    await db().query(`UPDATE email_logs SET state = $2::jsonb WHERE tenant_id = $1 AND id = 'em_n'`, [
      tenantId,
      JSON.stringify(state),
    ]);
    const locked = await withTransaction(db(), (c) => lockEmails(c, [{ tenantId, emailId: 'em_n' }]));
    expect(locked.get(emailKey(tenantId, 'em_n'))).toEqual(state);
  });

  it('an erased recipient leaves no address or subject in the row, stored whole or not', async () => {
    for (const [tenantId, whole] of [
      ['state-erase-narrow', false],
      ['state-erase-whole', true],
    ] as const) {
      const queued = {
        id: 'em_e:queued',
        type: 'email.queued',
        tenantId,
        emailId: 'em_e',
        occurredAt: '2026-05-01T08:00:00.000Z',
        data: { toEmail: 'bob@example.com', subject: 'Private' },
      } as DeliveryEvent;
      const state = (await project(db(), [queued])).get(emailKey(tenantId, 'em_e'))!;
      if (whole)
        await db().query(`UPDATE email_logs SET state = $2::jsonb WHERE tenant_id = $1`, [
          tenantId,
          JSON.stringify(state),
        ]);
      await withTransaction(db(), (c) =>
        emailLog.eraseRecipient!(c, {
          tenantId,
          address: 'bob@example.com',
          recipientHash: 'h',
          emailIds: ['em_e'],
          mentioned: [],
        }),
      );
      const { rows } = await db().query(
        'SELECT to_email, subject, state::text AS text FROM email_logs WHERE tenant_id = $1',
        [tenantId],
      );
      expect(rows[0]).toMatchObject({ to_email: null, subject: null });
      expect(rows[0].text).not.toContain('bob@example.com');
      expect(rows[0].text).not.toContain('Private');
      const locked = await withTransaction(db(), (c) => lockEmails(c, [{ tenantId, emailId: 'em_e' }]));
      expect(locked.get(emailKey(tenantId, 'em_e'))?.queued).toMatchObject({ toEmail: null, subject: null });
    }
  });
});

// `logRows` is what the projector writes: a new email's state is its columns and initial values.
it('logRows stores nothing of a state that its columns and the initial values hold', () => {
  const state = initialEmailState('t-cols', 'em_cols');
  const [row] = logRows([{ tenantId: 't-cols', emailId: 'em_cols', before: null, after: state, events: [] }]);
  expect(row!.state).toEqual({ queued: null });
  const opened = { ...state, openCount: 2, hardBounced: true };
  const [again] = logRows([
    { tenantId: 't-cols', emailId: 'em_cols', before: null, after: opened, events: [] },
  ]);
  expect(again!.state).toEqual({ queued: null, openCount: 2, hardBounced: true });
});
