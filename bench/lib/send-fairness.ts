/**
 * Fairness between tenants on the send path (SPEC §23), a phase of the send bench: tenant A's
 * campaign backlog against tenant B's single sends through the API.
 */
import { signDashboardToken } from '@tern/auth';
import type { EventStream } from '@tern/event-log';
import { enqueueSends, type NewSend } from '@tern/sending';
import type pg from 'pg';
import { postJson, waitDelivered } from './sending.js';
import { distribution } from './stats.js';

/**
 * Tenant A's campaign backlog (`bulk` bulk emails queued on the real send path) against tenant B's
 * `samples` single sends posted one every 100 ms: B's POST → DELIVERED distribution, and how much
 * of A was still due when B's last email was DELIVERED (so B did not simply wait for A to finish).
 * A sender and a projector must be running on `log`.
 */
export async function measureFairness(opts: {
  tag: string;
  log: EventStream;
  pool: pg.Pool;
  apiUrl: string;
  /** The API's JWT secret (B's dashboard token). */
  secret: string;
  bulk: number;
  samples: number;
  pollMs: number;
}) {
  const { tag, log, pool, apiUrl, bulk, pollMs } = opts;
  const tenantA = `fairA${tag}`;
  const tenantB = `fairB${tag}`;
  const authB = {
    authorization: `Bearer ${signDashboardToken({ secret: opts.secret, tenantId: tenantB, role: 'owner', expiresInSeconds: 3600 })}`,
    'content-type': 'application/json',
  };
  const at = new Date();
  for (let i = 0; i < bulk; i += 500) {
    const sends: NewSend[] = [];
    for (let k = i; k < Math.min(bulk, i + 500); k++) {
      sends.push({
        id: `em_fair${tag}${String(k).padStart(8, '0')}`,
        message: { from: 'news@acme.test', to: 'delivered@sandbox.test', subject: `News ${k}`, text: 'News' },
        subject: `News ${k}`,
        templateId: null,
        dueAt: at,
        scheduledAt: null,
        projectId: null,
        bulk: true,
      });
    }
    await enqueueSends(pool, log, tenantA, sends, at);
  }
  const ms: number[] = [];
  const pending: Promise<void>[] = [];
  for (let i = 0; i < opts.samples; i++) {
    const started = performance.now();
    const { id } = await postJson(
      `${apiUrl}/emails/send`,
      { from: 'auth@acme.test', to: 'delivered@sandbox.test', subject: `Reset ${i}`, text: 'Your code' },
      authB,
    );
    pending.push(
      waitDelivered(pool, tenantB, [id!], 1, { intervalMs: pollMs }).then((ok) => {
        if (!ok) throw new Error(`fairness: ${id} not DELIVERED within 120 s`);
        ms.push(performance.now() - started);
      }),
    );
    await new Promise((r) => setTimeout(r, 100));
  }
  await Promise.all(pending);
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM outgoing_emails WHERE tenant_id = $1 AND state <> 'done'`,
    [tenantA],
  );
  const bulkLeft = rows[0]?.n ?? 0;
  if (!(await waitDelivered(pool, tenantA, null, bulk, { intervalMs: pollMs })))
    throw new Error('fairness: campaign not DELIVERED');
  const d = distribution(ms);
  console.error(
    `[send] fairness: B p50 ${d.p50.toFixed(0)} ms, p95 ${d.p95.toFixed(0)} ms while A's ${bulk} bulk emails sent (${bulkLeft} still due at B's last)`,
  );
  return { p50: d.p50, p95: d.p95, bulkLeft };
}
