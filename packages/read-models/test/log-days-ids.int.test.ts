// The log partitioned by day (migration 0560) holds ninety-odd days at the default retention. A
// statement that reads it by a set of ids it learns only while it runs (an `unnest` of the batch)
// is planned over every day and may read them all (seen: the projector's lock of 500 emails over
// 94 days of 2 000 rows, a hash of all 180 000 rows, 133 ms instead of 1.6 ms). Each statement of
// the log's owner that reads it by a set of ids plans only the days of those ids (`amongIds`), on a
// Postgres server and on PGlite.
import { DAY_MS, type EmailState } from '@tern/domain';
import { idTime } from '@tern/kernel';
import type { PostgresKind } from '@tern/stores';
import type pg from 'pg';
import { beforeAll, expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import {
  emailViewsAt,
  ensureLogDays,
  lockEmails,
  logDay,
  logExpirySql,
  PG_READ_MODELS,
  writeBackDims,
} from '../src/index.js';

const DAY0 = Date.parse('2026-09-01T00:00:00Z');
const DAYS = 40;
const at = (day: number, ms = 0) => new Date(DAY0 + day * DAY_MS + ms);
const idAt = (t: Date, n: number) => `em_${idTime(t.getTime())}${String(n).padStart(16, '0')}`;

/** A statement as a module sent it: captured, not run. */
type Sent = { text: string; values: unknown[] };
function recorder(): { client: pg.ClientBase; sent: Sent[] } {
  const sent: Sent[] = [];
  const client = {
    query: async (text: string, values: unknown[] = []) => {
      sent.push({ text, values });
      return { rows: [], rowCount: 0 };
    },
  } as unknown as pg.ClientBase;
  return { client, sent };
}

type PlanNode = { 'Relation Name'?: string; Plans?: PlanNode[] };
/** The partitions of the log a statement's plan names (planned, whether or not run). */
async function plannedTables(db: pg.Pool, s: Sent): Promise<string[]> {
  const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (FORMAT JSON) ${s.text}`,
    s.values,
  );
  const found = new Set<string>();
  const walk = (n: PlanNode) => {
    if (n['Relation Name']?.startsWith('email_logs_')) found.add(n['Relation Name']);
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(rows[0]!['QUERY PLAN'][0].Plan);
  return [...found].sort();
}

onEveryPostgres('the log read by a set of ids', (db: () => pg.Pool, kind: PostgresKind) => {
  const tenants = [`ids-a-${kind}`, `ids-b-${kind}`];
  // The batch: emails of the last day and of a day twenty days back, and one id of no day.
  const batch = [
    ...Array.from({ length: 30 }, (_, n) => ({
      tenantId: tenants[n % 2]!,
      emailId: idAt(at(DAYS - 1, n * 1000), n),
    })),
    ...Array.from({ length: 5 }, (_, n) => ({
      tenantId: tenants[n % 2]!,
      emailId: idAt(at(20, n * 1000), n),
    })),
    { tenantId: tenants[1]!, emailId: `em_${'q'.repeat(24)}` },
  ];
  const expected = [logDay(at(20)).name, logDay(at(DAYS - 1)).name, 'email_logs_default'].sort();

  beforeAll(async () => {
    expect((await ensureLogDays(db(), at(0), DAYS)).made).toHaveLength(DAYS);
    // 40 rows a day of each tenant, the batch's among them.
    const rows = Array.from({ length: DAYS * 40 }, (_, i) => ({
      t: tenants[i % 2]!,
      i: idAt(at(Math.floor(i / 40), (i % 40) * 1000), i % 40),
    }));
    await db().query(
      `INSERT INTO email_logs (tenant_id, id, status, created_at, state, version)
       SELECT t, i, 'SENT', now(), '{}', 1 FROM unnest($1::text[], $2::text[]) AS u(t, i)
       ON CONFLICT DO NOTHING`,
      [rows.map((r) => r.t), rows.map((r) => r.i)],
    );
    await db().query(
      `INSERT INTO email_logs (tenant_id, id, status, created_at, state, version) VALUES ($1, $2, 'SENT', now(), '{}', 1)`,
      [batch.at(-1)!.tenantId, batch.at(-1)!.emailId],
    );
    await db().query('ANALYZE email_logs');
  }, 120_000);

  it('plans every day of the log without the ids (what the statements below avoid)', async () => {
    const all = await plannedTables(db(), {
      text: `SELECT e.id FROM email_logs e JOIN unnest($1::text[], $2::text[]) AS u(t, i)
               ON e.tenant_id = u.t AND e.id = u.i`,
      values: [batch.map((b) => b.tenantId), batch.map((b) => b.emailId)],
    });
    expect(all).toHaveLength(DAYS + 1);
  });

  it("the projector's lock of a batch plans only the days of its emails, and finds them", async () => {
    const { client, sent } = recorder();
    await lockEmails(client, batch);
    expect(sent).toHaveLength(1);
    expect(await plannedTables(db(), sent[0]!)).toEqual(expected);
    const found = await lockEmails(db() as unknown as pg.ClientBase, batch);
    expect(found.size).toBe(batch.length);
  });

  it("the dispatcher's views of a batch's emails plan only their days", async () => {
    const { client, sent } = recorder();
    const events = batch.map((b, n) => ({
      id: `ev_${n}`,
      type: 'email.delivered',
      tenantId: b.tenantId,
      emailId: b.emailId,
      occurredAt: new Date().toISOString(),
    }));
    await emailViewsAt(client, events as never);
    expect(sent).toHaveLength(1);
    expect(await plannedTables(db(), sent[0]!)).toEqual(expected);
  });

  it("a reprojection's hand-over of the classifications plans only the days of its emails", async () => {
    const { client, sent } = recorder();
    const states = batch.map((b) => ({ tenantId: b.tenantId, emailId: b.emailId, dims: { provider: 'x' } }));
    await writeBackDims(client, states as unknown as EmailState[]);
    expect(sent).toHaveLength(1);
    expect(await plannedTables(db(), sent[0]!)).toEqual(expected);
  });

  it("the retention job's delete of a batch of expired emails plans only the days of its ids", async () => {
    const expiry = logExpirySql(
      PG_READ_MODELS.flatMap((m) => m.emailContent ?? []),
      () => 'false',
      'outgoing_emails',
    );
    const tenant = batch[0]!.tenantId;
    const ids = batch.filter((b) => b.tenantId === tenant).map((b) => b.emailId);
    expect(
      await plannedTables(db(), { text: expiry.expiredEmails, values: [tenant, at(DAYS + 10), ids] }),
    ).toEqual(expected.filter((t) => t !== 'email_logs_default'));
  });
});
