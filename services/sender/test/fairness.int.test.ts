// Sending fairness and limits (SPEC §23) on a real Postgres: transactional mail of every tenant is
// claimed ahead of bulk mail, and a tenant's send rate holds across sender instances.

import type { RenderedMessage } from '@tern/contracts';
import { createEventStream, type PostgresEventLog } from '@tern/event-log';
import { isSuppressed } from '@tern/read-models';
import { getTemplate } from '@tern/templates';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import { createSender, type MailProvider, type SenderOptions } from '../src/index.js';

let db: LogDatabase;
let pool: pg.Pool;
let log: PostgresEventLog;

beforeAll(async () => {
  db = await openLogDatabase({ poolMax: 6 });
  ({ pool, log } = db);
}, 60_000);

afterAll(async () => {
  await db?.close();
});

/** A provider that accepts everything and remembers the order it was handed the emails in. */
function recordingProvider(): MailProvider & { handed: string[] } {
  const handed: string[] = [];
  return {
    name: 'recording',
    handed,
    async send(message: RenderedMessage, ctx) {
      handed.push(ctx.emailId);
      return { kind: 'sent', messageId: message.messageId };
    },
  };
}

/** Due rows as the sender's consumer leaves them (`pending`). */
async function due(tenant: string, ids: string[], opts: { bulk: boolean; dueAt: Date }) {
  await pool.query(
    `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message, bulk)
     SELECT $1, i, 'pending', $2, $3, $4 FROM unnest($5::text[]) AS i`,
    [
      tenant,
      opts.dueAt,
      JSON.stringify({ from: 'hello@acme.test', to: 'someone@example.com', subject: 'S', text: 'T' }),
      opts.bulk,
      ids,
    ],
  );
}

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}_${i}`);

function sender(
  provider: MailProvider,
  now: () => Date,
  extra: Pick<
    SenderOptions,
    'defaultSendRatePerSecond' | 'roundTargetMs' | 'maxBulkRoundSize' | 'maxRoundSize' | 'lanes'
  > = {},
) {
  return createSender({
    pool,
    log: createEventStream(log),
    provider,
    isSuppressed,
    getTemplate,
    tracking: { secret: 'fairness-tracking-secret-0123456789', publicUrl: 'http://127.0.0.1:3000' },
    concurrency: 8,
    now,
    ...extra,
  });
}

describe('claim order', () => {
  it("another tenant's transactional email goes out in the first claim round, ahead of a campaign due earlier", async () => {
    const t0 = new Date('2030-01-01T00:00:00Z');
    await due('order-a', ids('em_order_bulk', 100), { bulk: true, dueAt: new Date(t0.getTime() - 60_000) });
    await due('order-b', ['em_order_reset'], { bulk: false, dueAt: t0 });
    const provider = recordingProvider();
    await sender(provider, () => t0).runOnce();
    expect(provider.handed).toHaveLength(101);
    // The first claim round is 8 emails (concurrency): the reset is in it.
    expect(provider.handed.slice(0, 8)).toContain('em_order_reset');
  });

  it("a tenant's own transactional email goes ahead of its bulk mail", async () => {
    const t0 = new Date('2030-01-02T00:00:00Z');
    await due('order-c', ids('em_own_bulk', 30), { bulk: true, dueAt: new Date(t0.getTime() - 60_000) });
    await due('order-c', ['em_own_reset'], { bulk: false, dueAt: t0 });
    const provider = recordingProvider();
    await sender(provider, () => t0).runOnce();
    // Handed in rounds of 8 (concurrency), each round in parallel: the reset is in the first one.
    expect(provider.handed.slice(0, 8)).toContain('em_own_reset');
  });
});

describe('claim rounds (issue 29)', () => {
  /** A provider that answers after `hold` (a tick) and remembers how many emails it held at once. */
  function countingProvider(
    hold: () => Promise<unknown> = () => new Promise((r) => setImmediate(r)),
  ): MailProvider & { handed: string[]; mostAtOnce: number } {
    let inFlight = 0;
    const p = {
      name: 'counting',
      handed: [] as string[],
      mostAtOnce: 0,
      async send(message: RenderedMessage, ctx: { emailId: string }) {
        p.handed.push(ctx.emailId);
        p.mostAtOnce = Math.max(p.mostAtOnce, ++inFlight);
        await hold();
        inFlight--;
        return { kind: 'sent', messageId: message.messageId } as const;
      },
    };
    return p;
  }

  it('a transactional backlog is claimed in growing rounds; campaign mail grows only up to `maxBulkRoundSize`', async () => {
    const t0 = new Date('2030-04-01T00:00:00Z');
    await due('rounds-a', ids('em_rounds_tx', 120), { bulk: false, dueAt: t0 });
    const tx = countingProvider();
    await sender(tx, () => t0, { roundTargetMs: 60_000 }).runOnce();
    expect(tx.handed).toHaveLength(120);
    // 8, 16, 32, 64: the last round held more than the first size at once.
    expect(tx.mostAtOnce).toBeGreaterThan(8);

    await due('rounds-b', ids('em_rounds_bulk', 120), { bulk: true, dueAt: t0 });
    const bulk = countingProvider();
    await sender(bulk, () => t0, { roundTargetMs: 60_000, maxBulkRoundSize: 16 }).runOnce();
    expect(bulk.handed).toHaveLength(120);
    // 8, 16, 16, …: bulk rounds stop at their own cap, below the transactional one.
    expect(bulk.mostAtOnce).toBeGreaterThan(8);
    expect(bulk.mostAtOnce).toBeLessThanOrEqual(16);
  });

  it('lanes follow a transactional backlog (issue 45 item 1): several rounds in flight, never more than `maxRoundSize` claimed', async () => {
    const t0 = new Date('2030-04-03T00:00:00Z');
    // roundTargetMs 0: every round "took too long", so each stays at 8 (`concurrency`); what is
    // held at once beyond 8 is other lanes' rounds.
    const run = async (tenant: string, extra: { maxRoundSize: number; lanes?: number }) => {
      const sent = ids(`em_${tenant}`, 200);
      await due(tenant, sent, { bulk: false, dueAt: t0 });
      // Each message held a few ms, so that the rounds of several lanes overlap.
      const provider = countingProvider(() => new Promise((r) => setTimeout(r, 5)));
      await sender(provider, () => t0, { roundTargetMs: 0, ...extra }).runOnce();
      // Each email handed over exactly once, whatever lane claimed it.
      expect([...provider.handed].sort()).toEqual([...sent].sort());
      return provider.mostAtOnce;
    };
    const lanes = await run('lanes-a', { maxRoundSize: 32 });
    expect(lanes).toBeGreaterThan(8);
    expect(lanes).toBeLessThanOrEqual(32);
    // The lanes share one budget of claimed, unfinished emails: `maxRoundSize`.
    expect(await run('lanes-b', { maxRoundSize: 16 })).toBeLessThanOrEqual(16);
    // One lane: one round of 8 at a time.
    expect(await run('lanes-c', { maxRoundSize: 32, lanes: 1 })).toBeLessThanOrEqual(8);
  });

  it('transactional mail claimed with campaign mail is sent and appended first, in a round of its own', async () => {
    const t0 = new Date('2030-04-02T00:00:00Z');
    const bulkIds = ids('em_split_bulk', 5);
    await due('split-a', bulkIds, { bulk: true, dueAt: new Date(t0.getTime() - 60_000) });
    await due('split-a', ['em_split_reset'], { bulk: false, dueAt: t0 });
    // Whether the reset's outcome was in the log when each campaign email was handed over.
    const resetLogged: boolean[] = [];
    const provider: MailProvider = {
      name: 'checking',
      async send(message, ctx) {
        if (ctx.emailId !== 'em_split_reset') {
          const { rows } = await pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM event_log WHERE key = 'em_split_reset'`,
          );
          resetLogged.push((rows[0]?.n ?? 0) > 0);
        }
        return { kind: 'sent', messageId: message.messageId };
      },
    };
    await sender(provider, () => t0).runOnce();
    expect(resetLogged).toEqual([true, true, true, true, true]);
  });
});

describe('send rate per tenant', () => {
  const stateCounts = async (tenant: string) => {
    const { rows } = await pool.query<{ state: string; n: number; due: Date }>(
      `SELECT state, count(*)::int AS n, max(due_at) AS due FROM outgoing_emails WHERE tenant_id = $1 GROUP BY state`,
      [tenant],
    );
    return Object.fromEntries(rows.map((r) => [r.state, r]));
  };

  it("the tenant's sendRatePerSecond bounds each second, shared by two sender instances; other tenants are not held", async () => {
    const t0 = new Date('2030-02-01T00:00:00.250Z');
    await pool.query(
      `INSERT INTO tenant_settings (tenant_id, send_rate_per_second) VALUES ('rate-a', 5)
       ON CONFLICT (tenant_id) DO UPDATE SET send_rate_per_second = 5`,
    );
    await due('rate-a', ids('em_rate_a', 20), { bulk: true, dueAt: new Date(t0.getTime() - 1000) });
    await due('rate-free', ids('em_rate_free', 12), { bulk: true, dueAt: new Date(t0.getTime() - 1000) });
    let clock = t0;
    const one = recordingProvider();
    const two = recordingProvider();
    const first = sender(one, () => clock);
    const second = sender(two, () => clock);
    await first.runOnce();
    await second.runOnce();
    const ofA = (p: { handed: string[] }) => p.handed.filter((id) => id.startsWith('em_rate_a_'));
    expect(ofA(one).length + ofA(two).length).toBe(5);
    // The tenant without a limit is sent at once, whatever the limited one waits for.
    expect([...one.handed, ...two.handed].filter((id) => id.startsWith('em_rate_free_'))).toHaveLength(12);
    const held = await stateCounts('rate-a');
    expect(held.pending?.n).toBe(15);
    expect(held.pending?.due.toISOString()).toBe('2030-02-01T00:00:01.000Z');
    expect(held.sending).toBeUndefined();
    // Rows sent back to the due-list lost no attempt.
    const attempts = await pool.query<{ a: number }>(
      `SELECT max(attempts)::int AS a FROM outgoing_emails WHERE tenant_id = 'rate-a' AND state = 'pending'`,
    );
    expect(attempts.rows[0]!.a).toBe(0);

    clock = new Date('2030-02-01T00:00:01.100Z');
    await second.runOnce();
    await first.runOnce();
    expect(ofA(one).length + ofA(two).length).toBe(10);
    clock = new Date('2030-02-01T00:00:03.000Z');
    await first.runOnce();
    await first.runOnce();
    clock = new Date('2030-02-01T00:00:04.000Z');
    await first.runOnce();
    expect(ofA(one).length + ofA(two).length).toBe(20);
    expect(new Set([...ofA(one), ...ofA(two)]).size).toBe(20);
  });

  it('the server default (SEND_RATE_PER_SECOND) applies to a tenant whose settings name none', async () => {
    const t0 = new Date('2030-03-01T00:00:00Z');
    await due('rate-default', ids('em_rate_default', 9), { bulk: false, dueAt: t0 });
    const provider = recordingProvider();
    await sender(provider, () => t0, { defaultSendRatePerSecond: 3 }).runOnce();
    expect(provider.handed).toHaveLength(3);
  });
});
