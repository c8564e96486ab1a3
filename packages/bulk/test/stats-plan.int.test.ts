// Campaign counts (`mailStats`, SPEC §15) on tables Postgres has never analysed: the embedded
// default's always (PGlite runs no autovacuum) and a server's until its autovacuum comes. Planned
// for the one row it then guesses, the join of the campaign's emails to the log read the whole span
// of their ids again for every email: GET /campaigns/:id of 10 000 contacts took ≈ 90 s (the
// campaigns e2e timed out on it). Each email's log row must be read once, whatever the guess.
import { idTime } from '@tern/kernel';
import type pg from 'pg';
import { beforeAll, expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import { mailStats, statsKey } from '../src/index.js';
import { mailStatsPlan, type PlanNode } from './stats-plan-support.js';

const EMAILS = 2000;

/** Rows the statement's scans of the log produced or filtered out, over all their loops. */
function logRowsRead(plan: PlanNode): number {
  let rows = 0;
  const walk = (n: PlanNode) => {
    if (n['Relation Name']?.startsWith('email_logs'))
      rows += ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 0);
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(plan);
  return rows;
}

onEveryPostgres('campaign counts on tables never analysed', (db: () => pg.Pool) => {
  const tenant = 'stats-plan';
  const campaign = 'campaign:cmp_plan';

  beforeAll(async () => {
    const now = Date.now();
    const ids = Array.from(
      { length: EMAILS },
      (_, n) => `em_${idTime(now + n)}${String(n).padStart(16, '0')}`,
    );
    await db().query(
      `INSERT INTO email_logs (tenant_id, id, status, created_at, state, version)
       SELECT $1, i, 'DELIVERED', now(), '{}', 1 FROM unnest($2::text[]) AS u(i)`,
      [tenant, ids],
    );
    await db().query(
      `INSERT INTO bulk_emails (tenant_id, email_id, source, step, contact_id, created_at)
       SELECT $1, i, $2, 0, 'ct_' || i, now() FROM unnest($3::text[]) AS u(i)`,
      [tenant, campaign, ids],
    );
  }, 120_000);

  it('reads each email’s log row once, and counts them all', async () => {
    const stats = (await mailStats(db(), tenant, [campaign])).get(statsKey(campaign, 0));
    expect(stats).toMatchObject({ recipients: EMAILS, sent: EMAILS, delivered: EMAILS });
    expect(logRowsRead(await mailStatsPlan(db(), tenant, [campaign]))).toBeLessThanOrEqual(2 * EMAILS);
  }, 120_000);
});
