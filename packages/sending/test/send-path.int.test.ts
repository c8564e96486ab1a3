// The send path's statements (SPEC §11, §15, §22; `outgoing_emails`, owned by packages/sending),
// called directly on a Postgres server and on PGlite: enqueueSends writes each row once and takes
// back what it wrote when the log refuses the append; cancel and reschedule move only an email not
// yet handed to the provider; the lookups stay in their tenant (or fold the case of a VERP id).
import type { DeliveryEvent } from '@tern/contracts';
import { expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import {
  cancelSend,
  emailProject,
  enqueueSends,
  markSendCancelled,
  type NewSend,
  rescheduleSend,
  sendsByIdAnyCase,
} from '../src/index.js';

const T0 = new Date('2026-07-01T10:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

/** A log that keeps what it was asked to append, or refuses it. */
function recordingLog(refuse = false) {
  const appended: DeliveryEvent[] = [];
  return {
    appended,
    async append(events: readonly DeliveryEvent[]) {
      if (refuse) throw new Error('log unavailable');
      appended.push(...events);
    },
  };
}

const send = (id: string, over: Partial<NewSend> = {}): NewSend => ({
  id,
  message: { from: 'a@acme.test', to: [`${id}@example.com`, 'cc@example.com'], subject: `Subject ${id}` },
  subject: `Subject ${id}`,
  templateId: null,
  dueAt: T0,
  scheduledAt: null,
  projectId: null,
  ...over,
});

onEveryPostgres('the send path statements', (db) => {
  const stateOf = async (tenant: string, id: string) =>
    (
      await db().query<{ state: string; due_at: Date; scheduled_at: Date | null; bulk: boolean }>(
        'SELECT state, due_at, scheduled_at, bulk FROM outgoing_emails WHERE tenant_id = $1 AND id = $2',
        [tenant, id],
      )
    ).rows[0];

  it('enqueueSends writes each row awaiting the log, then appends one email.queued per send', async () => {
    const T = 'send-enqueue';
    const log = recordingLog();
    await enqueueSends(
      db(),
      log,
      T,
      [send('em_1', { projectId: 'prj_1' }), send('em_2', { bulk: true })],
      T0,
    );
    expect(log.appended.map((e) => [e.type, e.tenantId, e.emailId])).toEqual([
      ['email.queued', T, 'em_1'],
      ['email.queued', T, 'em_2'],
    ]);
    expect(log.appended[0]?.data).toMatchObject({ toEmail: 'em_1@example.com', subject: 'Subject em_1' });
    expect(await stateOf(T, 'em_1')).toMatchObject({ state: 'awaiting_log', bulk: false });
    expect(await stateOf(T, 'em_2')).toMatchObject({ state: 'awaiting_log', bulk: true });
    expect(await emailProject(db(), T, 'em_1')).toBe('prj_1');
    expect(await emailProject(db(), T, 'em_2')).toBeNull();
    expect(await emailProject(db(), T, 'em_none')).toBeUndefined();
    expect(await emailProject(db(), 'send-enqueue-other', 'em_1')).toBeUndefined();

    // Again with the same id: the row is left alone (its content stays), the event re-appended.
    await enqueueSends(db(), log, T, [send('em_1', { subject: 'changed', projectId: 'prj_2' })], at(5));
    expect(await emailProject(db(), T, 'em_1')).toBe('prj_1');
    expect(log.appended).toHaveLength(3);
  });

  it('a refused append takes back the rows this call wrote, not rows that were there', async () => {
    const T = 'send-refused';
    await enqueueSends(db(), recordingLog(), T, [send('em_kept')], T0);
    await expect(
      enqueueSends(db(), recordingLog(true), T, [send('em_kept'), send('em_new')], at(1)),
    ).rejects.toThrow('log unavailable');
    expect(await stateOf(T, 'em_kept')).toMatchObject({ state: 'awaiting_log' });
    expect(await stateOf(T, 'em_new')).toBeUndefined();
  });

  it('concurrent calls share one insert; an id two of them carry is the first’s; a bad row fails its caller alone', async () => {
    const T = 'send-grouped';
    const pool = db();
    let inserts = 0;
    // Its own pool object, so its calls group among themselves only (the group is per pool).
    const counted = {
      query: ((text: string, values?: unknown[]) => {
        if (text.includes('INSERT INTO outgoing_emails')) inserts++;
        return pool.query(text, values);
      }) as typeof pool.query,
    };
    const log = recordingLog();
    // The first goes alone at once; the five made while it runs share the next statement. The
    // last of them carries `em_g_dup` again with a log that refuses: had it been told it wrote the
    // row, its take-back would delete the first's.
    const calls = [
      enqueueSends(counted, log, T, [send('em_g_0')], T0),
      ...[1, 2, 3].map((i) => enqueueSends(counted, log, T, [send(`em_g_${i}`), send(`em_g_${i}b`)], T0)),
      enqueueSends(counted, log, `${T}-other`, [send('em_g_dup')], T0),
      enqueueSends(counted, log, T, [send('em_g_dup')], T0),
      enqueueSends(counted, recordingLog(true), T, [send('em_g_dup'), send('em_g_4')], T0),
    ];
    const settled = await Promise.allSettled(calls);
    expect(settled.map((r) => r.status)).toEqual([...Array(6).fill('fulfilled'), 'rejected']);
    expect(inserts).toBe(2);
    for (const id of ['em_g_0', 'em_g_1', 'em_g_1b', 'em_g_3b', 'em_g_dup'])
      expect(await stateOf(T, id)).toMatchObject({ state: 'awaiting_log' });
    expect(await stateOf(`${T}-other`, 'em_g_dup')).toMatchObject({ state: 'awaiting_log' });
    expect(await stateOf(T, 'em_g_4')).toBeUndefined();

    // A row Postgres refuses (a NUL in its JSON) fails its own call; the others of its group land.
    inserts = 0;
    const first = enqueueSends(counted, log, T, [send('em_g_5')], T0);
    const bad = enqueueSends(
      counted,
      log,
      T,
      [
        send('em_g_bad', {
          message: { from: 'a@acme.test', to: 'x@example.com', subject: 'nul \u0000 here' },
        }),
      ],
      T0,
    );
    const good = enqueueSends(counted, log, T, [send('em_g_6')], T0);
    const [a, b, c] = await Promise.allSettled([first, bad, good]);
    expect([a.status, b.status, c.status]).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await stateOf(T, 'em_g_6')).toMatchObject({ state: 'awaiting_log' });
    expect(await stateOf(T, 'em_g_bad')).toBeUndefined();
    expect(inserts).toBe(4); // alone, the failed pair, then each of the pair again
  });

  it('cancel: only an email not yet handed; once; the row becomes cancelled when told', async () => {
    const T = 'send-cancel';
    await enqueueSends(db(), recordingLog(), T, [send('em_c'), send('em_h')], T0);
    await db().query(
      `UPDATE outgoing_emails SET state = 'sending', attempts = 1 WHERE tenant_id = $1 AND id = 'em_h'`,
      [T],
    );
    expect(await cancelSend(db(), T, 'em_c', at(1))).toBe('cancelled');
    expect(await stateOf(T, 'em_c')).toMatchObject({ state: 'cancelling' });
    expect(await cancelSend(db(), T, 'em_c', at(2))).toBe('already_cancelled');
    await markSendCancelled(db(), T, 'em_c');
    expect(await stateOf(T, 'em_c')).toMatchObject({ state: 'cancelled' });
    expect(await cancelSend(db(), T, 'em_c', at(3))).toBe('already_cancelled');
    expect(await cancelSend(db(), T, 'em_h', at(1))).toBe('handed');
    expect(await stateOf(T, 'em_h')).toMatchObject({ state: 'sending' });
    expect(await cancelSend(db(), T, 'em_none', at(1))).toBe('no_send');
    expect(await cancelSend(db(), 'send-cancel-other', 'em_h', at(1))).toBe('no_send');
    // markSendCancelled moves only a cancelling row.
    await markSendCancelled(db(), T, 'em_h');
    expect(await stateOf(T, 'em_h')).toMatchObject({ state: 'sending' });
  });

  it('reschedule: only a scheduled email still waiting for its time; due and scheduled move together', async () => {
    const T = 'send-reschedule';
    await enqueueSends(
      db(),
      recordingLog(),
      T,
      [send('em_s', { dueAt: at(3600), scheduledAt: at(3600) }), send('em_now')],
      T0,
    );
    expect(await rescheduleSend(db(), T, 'em_s', at(7200), at(10))).toBe('moved');
    expect(await stateOf(T, 'em_s')).toMatchObject({ due_at: at(7200), scheduled_at: at(7200) });
    // Not scheduled, or its time has come: handed (nothing moves).
    expect(await rescheduleSend(db(), T, 'em_now', at(7200), at(10))).toBe('handed');
    expect(await rescheduleSend(db(), T, 'em_s', at(9000), at(7200))).toBe('handed');
    expect(await stateOf(T, 'em_s')).toMatchObject({ due_at: at(7200) });
    expect(await rescheduleSend(db(), T, 'em_none', at(9000), at(10))).toBe('no_send');
  });

  it('sendsByIdAnyCase finds a send whatever the case a relay folded its id to, in every tenant', async () => {
    await enqueueSends(db(), recordingLog(), 'send-case-a', [send('em_MixedCase')], T0);
    await enqueueSends(db(), recordingLog(), 'send-case-b', [send('em_mixedcase')], T0);
    const found = await sendsByIdAnyCase(db(), 'EM_MIXEDCASE');
    expect(found.map((r) => [r.tenant_id, r.id]).sort()).toEqual([
      ['send-case-a', 'em_MixedCase'],
      ['send-case-b', 'em_mixedcase'],
    ]);
    expect(found[0]?.message).toMatchObject({ from: 'a@acme.test' });
    expect(await sendsByIdAnyCase(db(), 'em_other')).toEqual([]);
  });
});
