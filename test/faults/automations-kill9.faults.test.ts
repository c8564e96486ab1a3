import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { insertTemplate } from '@tern/templates';
import { afterAll, describe, expect, it } from 'vitest';
import { startTern, type TernProcess } from '../e2e/tern-process.js';
import { tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { faultServers } from './setup.js';
import { report, rng } from './stream.js';

/**
 * Issue 47 (SPEC §27): automation runs in flight (FAULTS_AUTOMATION_RUNS, default 10 000) and
 * `kill -9` of the worker process (`tern --services=projector,api,worker`: a worker without
 * CLICKHOUSE_URL runs next to the projector that owns the embedded chDB) at random points (FAULTS_AUTOMATION_KILLS, default 3), then a fresh worker finishes. The oracle,
 * read with the test's own SQL: every run completed with exactly its three steps recorded
 * (send → update → send); the send path holds exactly the two emails of each run, each under an id
 * ending with the hash of (tenant, run, step) — no other email; the contact's row was updated exactly once
 * (a trigger of the test's own counts every committed UPDATE of a contact).
 */
const RUNS = Number(process.env.FAULTS_AUTOMATION_RUNS ?? 10_000);
const KILLS = Number(process.env.FAULTS_AUTOMATION_KILLS ?? 3);
const SEED = Number(process.env.FAULTS_SEED ?? 9);
const TENANT = 'faults-automations';
const AUTOMATION = 'aut_faultsKill9Automation000';
const STEPS = ['0', '1', '2'];

/**
 * The oracle's own derivation of what names a send's email (services/worker's `timedEmailId`): the
 * first 20 hex characters of the hash of (tenant, run, step), after `em_` and 10 characters of the
 * step's due time. A step sent twice under two due times would show as one hash twice.
 */
const sendHash = (runId: string, path: string) =>
  createHash('sha256').update([TENANT, 'automation', runId, path].join('\u0000')).digest('hex').slice(0, 20);
const TIMED_ID = /^em_[0-9A-HJKMNP-TV-Z]{10}([0-9a-f]{20})$/;

describe('kill -9 of the worker with automation runs in flight', () => {
  const servers = faultServers({ build: true, migrate: true });
  /** The worker of the moment: killed in afterAll too (a timed-out test never reaches its finally). */
  let worker: TernProcess | undefined;
  // Runs before the servers' afterAll (after-hooks run in reverse order).
  afterAll(() => {
    if (worker && worker.child.exitCode === null) worker.child.kill('SIGKILL');
  });

  it(`${RUNS} runs, ${KILLS} × kill -9 of the worker: no step lost, none doubled`, async () => {
    const { db, pool } = servers;
    const started = Date.now();
    const at = new Date();
    const a = await insertTemplate(
      pool,
      TENANT,
      'tpl_faultsA',
      { name: 'a', subject: 'First {{firstName}}', html: null, text: 'one' },
      at,
    );
    const b = await insertTemplate(
      pool,
      TENANT,
      'tpl_faultsB',
      { name: 'b', subject: 'Second', html: null, text: 'two' },
      at,
    );
    await pool.query(
      `INSERT INTO automations (tenant_id, id, name, from_address, trigger_event, steps, created_at, updated_at)
       VALUES ($1, $2, 'faults', 'hello@acme.test', 'contact.created', $3, $4, $4)`,
      [TENANT, AUTOMATION, JSON.stringify([{ send: a!.id }, { update: { done: 1 } }, { send: b!.id }]), at],
    );
    await pool.query(
      `INSERT INTO contacts (tenant_id, id, email, first_name, attributes, subscribed, audiences, created_at, updated_at)
       SELECT $1, 'ct_f' || n, 'f' || n || '@example.com', 'F', '{}', true, '{}', $2, $2
         FROM generate_series(1, $3) AS n`,
      [TENANT, at, RUNS],
    );
    // The observer: one row per committed UPDATE of a contact (a doubled `update` step shows here).
    await pool.query(`CREATE TABLE faults_contact_updates (contact_id text NOT NULL);
      CREATE FUNCTION faults_count_update() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN INSERT INTO faults_contact_updates VALUES (NEW.id); RETURN NEW; END $$;
      CREATE TRIGGER faults_count_update AFTER UPDATE ON contacts FOR EACH ROW EXECUTE FUNCTION faults_count_update();`);
    // The triggers: each contact's contact.created, in the inbox the worker drains.
    await pool.query(
      `INSERT INTO automation_inbox (tenant_id, id, name, contact_id, occurred_at)
       SELECT $1, 'cev_' || id || ':created', 'contact.created', id, $2 FROM contacts WHERE tenant_id = $1`,
      [TENANT, at],
    );

    const dataDir = tempDir('tern-faults-automations-');
    const env = {
      DATABASE_URL: db.url,
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_TOPIC: uniqueName('faults-automations'),
      KAFKA_PARTITIONS: '3',
      DATA_DIR: dataDir,
      NODE_ENV: 'development',
      LOG_LEVEL: 'error',
    };
    const start = () =>
      startTern({ env, args: ['--services=projector,api,worker'], readyTimeoutMs: 120_000 });
    const stepsDone = async () =>
      Number((await pool.query('SELECT count(*) AS n FROM automation_run_steps')).rows[0]?.n ?? 0);
    const total = RUNS * STEPS.length;
    const random = rng(SEED);
    const points = Array.from({ length: KILLS }, (_, k) =>
      Math.floor(total * ((k + 0.2 + 0.6 * random()) / (KILLS + 1))),
    );
    const killedAt: number[] = [];
    try {
      for (const point of points) {
        worker = await start();
        await waitFor(async () => (await stepsDone()) >= point, {
          description: `steps past ${point}`,
          timeoutMs: 600_000,
          intervalMs: 20,
        });
        const exited = new Promise((r) => worker!.child.once('exit', r));
        worker.child.kill('SIGKILL');
        await exited;
        killedAt.push(await stepsDone());
      }
      worker = await start();
      await waitFor(
        async () =>
          Number(
            (await pool.query(`SELECT count(*) AS n FROM automation_runs WHERE state = 'completed'`)).rows[0]
              ?.n,
          ) === RUNS,
        { description: 'every run completed', timeoutMs: 600_000, intervalMs: 500 },
      );
      expect(await worker.stop()).toBe(0);
      worker = undefined;
    } finally {
      if (worker) worker.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }

    const runs = (
      await pool.query<{ id: string; contact_id: string; state: string; steps_done: number }>(
        'SELECT id, contact_id, state, steps_done FROM automation_runs WHERE tenant_id = $1',
        [TENANT],
      )
    ).rows;
    const steps = (
      await pool.query<{ run_id: string; path: string; email_id: string | null }>(
        'SELECT run_id, path, email_id FROM automation_run_steps WHERE tenant_id = $1',
        [TENANT],
      )
    ).rows;
    const emailIds = (
      await pool.query<{ id: string }>('SELECT id FROM outgoing_emails WHERE tenant_id = $1', [TENANT])
    ).rows.map((r) => r.id);
    const emails = new Set(emailIds);
    // Each email by the hash it ends with; an id of another shape is stray.
    const byHash = new Map<string, number>();
    for (const id of emailIds) {
      const hash = TIMED_ID.exec(id)?.[1];
      if (hash !== undefined) byHash.set(hash, (byHash.get(hash) ?? 0) + 1);
    }
    const updates = new Map<string, number>();
    for (const r of (
      await pool.query<{ contact_id: string }>('SELECT contact_id FROM faults_contact_updates')
    ).rows)
      updates.set(r.contact_id, (updates.get(r.contact_id) ?? 0) + 1);
    const done = (
      await pool.query<{ n: string }>(`SELECT count(*) AS n FROM contacts WHERE properties->>'done' = '1'`)
    ).rows[0]?.n;

    const stepsOf = new Map<string, string[]>();
    for (const s of steps) stepsOf.set(s.run_id, [...(stepsOf.get(s.run_id) ?? []), s.path]);
    let lost = 0;
    let double = 0;
    const expected = new Set<string>();
    for (const r of runs) {
      const paths = (stepsOf.get(r.id) ?? []).sort();
      lost += STEPS.filter((p) => !paths.includes(p)).length;
      for (const p of ['0', '2']) {
        const hash = sendHash(r.id, p);
        expected.add(hash);
        const n = byHash.get(hash) ?? 0;
        if (n === 0) lost += 1;
        if (n > 1) double += n - 1;
      }
      const n = updates.get(r.contact_id) ?? 0;
      if (n === 0) lost += 1;
      if (n > 1) double += n - 1;
      if (r.state !== 'completed' || r.steps_done !== STEPS.length) lost += 1;
    }
    const stray = emailIds.filter((id) => !expected.has(TIMED_ID.exec(id)?.[1] ?? '')).length;
    double += stray + Math.max(0, steps.length - total);
    report(
      `kill -9 × ${KILLS} of the worker, automations`,
      RUNS,
      { lost, double, diffs: [] },
      `steps=${steps.length} emails=${emails.size} killedAtSteps=${killedAt.join(',')} seconds=${Math.round((Date.now() - started) / 1000)}`,
    );
    expect(runs).toHaveLength(RUNS);
    expect(steps).toHaveLength(total);
    expect(emails.size).toBe(2 * RUNS);
    expect(Number(done)).toBe(RUNS);
    expect({ lost, double, stray }).toEqual({ lost: 0, double: 0, stray: 0 });
    expect(killedAt).toHaveLength(KILLS);
  }, 1_500_000);
});
