// Campaign and sequence counts (`mailStats`, SPEC §15) over the log partitioned by day (migration
// 0560), on a Postgres server and on PGlite: the counts join each email of the sources to its log
// row; Postgres cannot prune that join while it plans (the ids come from `bulk_emails`), and chose to
// read the tenant's rows of every day. Bounded by the sources' lowest and highest ids, it reads only
// the days of their emails, and counts the same.
import { DAY_MS } from '@tern/domain';
import { idTime } from '@tern/kernel';
import { ensureLogDays } from '@tern/read-models';
import type { PostgresKind } from '@tern/stores';
import type pg from 'pg';
import { beforeAll, expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import { mailStats, statsKey } from '../src/index.js';
import { mailStatsPlan, type PlanNode } from './stats-plan-support.js';

const DAY0 = Date.parse('2026-08-01T00:00:00Z');
const DAYS = 30;
const at = (day: number, ms = 0) => DAY0 + day * DAY_MS + ms;
const idAt = (ms: number, n: number) => `em_${idTime(ms)}${String(n).padStart(16, '0')}`;

/** The partitions of the log a statement's run read (each scan run at least once). */
function readDays(plan: PlanNode): string[] {
  const found = new Set<string>();
  const walk = (n: PlanNode) => {
    if (n['Relation Name']?.startsWith('email_logs_') && (n['Actual Loops'] ?? 0) > 0)
      found.add(n['Relation Name']);
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(plan);
  return [...found].sort();
}

onEveryPostgres(
  'campaign counts over the log partitioned by day',
  (db: () => pg.Pool, kind: PostgresKind) => {
    const tenant = `stats-${kind}`;
    const campaign = `campaign:cmp_${kind}`;

    beforeAll(async () => {
      expect((await ensureLogDays(db(), new Date(at(0)), DAYS)).made).toHaveLength(DAYS);
      // 60 emails a day of the tenant's transactional mail, every day; the campaign's 40 on day 12.
      const rows = Array.from({ length: DAYS * 60 }, (_, i) =>
        idAt(at(Math.floor(i / 60), (i % 60) * 1000), i % 60),
      );
      const sent = Array.from({ length: 40 }, (_, n) => idAt(at(12, 3_600_000 + n), 100 + n));
      await db().query(
        `INSERT INTO email_logs (tenant_id, id, status, created_at, state, version)
       SELECT $1, i, CASE WHEN k % 4 = 0 THEN 'BOUNCED' ELSE 'DELIVERED' END, now(), '{}', 1
         FROM unnest($2::text[]) WITH ORDINALITY AS u(i, k)`,
        [tenant, [...rows, ...sent]],
      );
      await db().query(
        `INSERT INTO bulk_emails (tenant_id, email_id, source, step, contact_id, created_at)
       SELECT $1, i, $2, 0, 'ct_' || i, now() FROM unnest($3::text[]) AS u(i)`,
        [tenant, campaign, sent],
      );
      await db().query('ANALYZE email_logs');
      await db().query('ANALYZE bulk_emails');
    }, 120_000);

    it('counts a campaign from the days of its emails only, and counts them all', async () => {
      const stats = (await mailStats(db(), tenant, [campaign])).get(statsKey(campaign, 0));
      expect(stats).toMatchObject({ recipients: 40, sent: 40, delivered: 30, bounced: 10 });
      expect(readDays(await mailStatsPlan(db(), tenant, [campaign]))).toEqual(['email_logs_d20260813']);
    });
  },
);
