import { AUTOMATIC_SUPPRESSION_REASONS, type DeliveryEvent, ERASED_TEXT } from '@tern/contracts';
import type { FoldedEmail } from '@tern/domain';
import { type EmailState, emailKey, normaliseTimestamp, recipientOf } from '@tern/domain';
import type pg from 'pg';
import { batchPruner } from '../prune.js';
import type { PgReadModel } from '../read-model.js';

/** A suppression the projection adds on its own (SPEC §13). */
interface AutomaticSuppression {
  tenantId: string;
  email: string;
  reason: string;
  source: 'bounce' | 'complaint';
}

/**
 * What an email's change puts on its tenant's suppression list: its recipient, the first time
 * the email is known (queued) and hard-bounced, or complained about. Only on that transition, so
 * an address a user removed is not put back by a later event of the same email (an open, a
 * second complaint). States stored before `hardBounced` existed read it as false.
 */
export function newSuppressions(before: EmailState | null, after: EmailState): AutomaticSuppression[] {
  // An erased recipient (null) is suppressed by its keyed hash already (erased_recipients).
  const email = after.queued?.toEmail?.toLowerCase();
  if (email === undefined) return [];
  const known = before?.queued != null;
  const out: AutomaticSuppression[] = [];
  const { tenantId } = after;
  if (after.hardBounced && !(known && before?.hardBounced === true)) {
    out.push({ tenantId, email, reason: AUTOMATIC_SUPPRESSION_REASONS.bounce, source: 'bounce' });
  }
  // Complaints naming one recipient of several suppress that one (`namedSuppressions`).
  const unnamed = (s: EmailState | null | undefined) =>
    (s?.complaintCount ?? 0) - (s?.namedComplaintCount ?? 0);
  if (unnamed(after) > 0 && !(known && unnamed(before) > 0)) {
    out.push({ tenantId, email, reason: AUTOMATIC_SUPPRESSION_REASONS.complaint, source: 'complaint' });
  }
  return out;
}

/**
 * What freshly applied outcomes of ONE recipient of several put on the suppression list (SPEC
 * §22): the named address of a hard bounce or a complaint. A redelivered event is not applied
 * again, so it adds nothing twice; an erased recipient (`[erased]`) adds nothing (its keyed hash
 * suppresses it already).
 */
export function namedSuppressions(applied: readonly DeliveryEvent[]): AutomaticSuppression[] {
  const out: AutomaticSuppression[] = [];
  for (const e of applied) {
    const email = recipientOf(e);
    if (email === undefined || email === ERASED_TEXT) continue;
    if (e.type === 'email.bounced' && e.data.bounceType === 'hard')
      out.push({
        tenantId: e.tenantId,
        email: email.toLowerCase(),
        reason: AUTOMATIC_SUPPRESSION_REASONS.bounce,
        source: 'bounce',
      });
    else if (e.type === 'email.complained')
      out.push({
        tenantId: e.tenantId,
        email: email.toLowerCase(),
        reason: AUTOMATIC_SUPPRESSION_REASONS.complaint,
        source: 'complaint',
      });
  }
  return out;
}

/** SPEC §21: this many soft bounces of one address within {@link SOFT_BOUNCE_WINDOW_MS} suppress it. */
export const SOFT_BOUNCE_LIMIT = 3;
export const SOFT_BOUNCE_WINDOW_MS = 7 * 86_400_000;

/** True when some window of `windowMs` holds `limit` of these instants. */
export function denseEnough(instants: readonly number[], limit: number, windowMs: number): boolean {
  const sorted = [...instants].sort((a, b) => a - b);
  for (let i = 0; i + limit - 1 < sorted.length; i++) {
    if (sorted[i + limit - 1]! - sorted[i]! <= windowMs) return true;
  }
  return false;
}

/**
 * The soft-bounce rule (SPEC §21): every freshly applied `email.bounced { bounceType: "soft" }`
 * of a known recipient is one row of `soft_bounces` (the event id keeps a redelivery one row);
 * an address with {@link SOFT_BOUNCE_LIMIT} of them within 7 days of one of this batch's
 * (before or after it: events may arrive late) is suppressed with reason `soft_bounce`.
 */
async function softBounceSuppressions(
  client: pg.ClientBase,
  applied: readonly DeliveryEvent[],
  emails: readonly FoldedEmail[],
): Promise<AutomaticSuppression[]> {
  const softs = applied.filter(
    (e) => e.type === 'email.bounced' && e.data.bounceType === 'soft' && recipientOf(e) !== ERASED_TEXT,
  );
  if (softs.length === 0) return [];
  const toOf = new Map<string, string>();
  for (const { after: state } of emails) {
    const to = state.queued?.toEmail;
    if (to) toOf.set(emailKey(state.tenantId, state.emailId), to.toLowerCase());
  }
  const rows = softs.flatMap((e) => {
    // One recipient of several: its own address (SPEC §22); else the email's.
    const email = recipientOf(e)?.toLowerCase() ?? toOf.get(emailKey(e.tenantId, e.emailId));
    return email ? [{ t: e.tenantId, e: email, id: e.id, at: normaliseTimestamp(e.occurredAt) }] : [];
  });
  if (rows.length === 0) return [];
  await client.query(
    `INSERT INTO soft_bounces (tenant_id, email, event_id, occurred_at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
     ON CONFLICT DO NOTHING`,
    [rows.map((r) => r.t), rows.map((r) => r.e), rows.map((r) => r.id), rows.map((r) => r.at)],
  );
  const { rows: seen } = await client.query<{ tenant_id: string; email: string; at: Date }>(
    `SELECT DISTINCT s.tenant_id, s.email, s.event_id, s.occurred_at AS at
       FROM soft_bounces s
       JOIN unnest($1::text[], $2::text[], $3::timestamptz[]) AS x(t, e, at)
         ON s.tenant_id = x.t AND s.email = x.e
        AND s.occurred_at BETWEEN x.at - $4::interval AND x.at + $4::interval`,
    [
      rows.map((r) => r.t),
      rows.map((r) => r.e),
      rows.map((r) => r.at),
      `${SOFT_BOUNCE_WINDOW_MS} milliseconds`,
    ],
  );
  const instants = new Map<string, { tenantId: string; email: string; at: number[] }>();
  for (const r of seen) {
    const k = emailKey(r.tenant_id, r.email);
    const entry = instants.get(k) ?? { tenantId: r.tenant_id, email: r.email, at: [] as number[] };
    entry.at.push(r.at.getTime());
    instants.set(k, entry);
  }
  return [...instants.values()]
    .filter((x) => denseEnough(x.at, SOFT_BOUNCE_LIMIT, SOFT_BOUNCE_WINDOW_MS))
    .map((x) => ({
      tenantId: x.tenantId,
      email: x.email,
      reason: AUTOMATIC_SUPPRESSION_REASONS.softBounce,
      source: 'bounce' as const,
    }));
}

/**
 * The automatic part of the suppression list (SPEC §13, §21): hard bounces, complaints and
 * repeated soft bounces add the recipient; `soft_bounces` keeps the soft bounces the rule counts.
 * A rebuild keeps both (manual entries are not in the log; the replay adds the automatic ones
 * again only where they are missing).
 */
export const suppressionList: PgReadModel = {
  name: 'suppressions',
  store: 'postgres',
  rebuild: 'keep',
  tables: ['suppressions', 'soft_bounces'],
  async apply(client, { applied, folded }) {
    const suppressions = folded.emails.flatMap(({ before, after }) => newSuppressions(before, after));
    suppressions.push(...namedSuppressions(applied));
    suppressions.push(...(await softBounceSuppressions(client, applied, folded.emails)));
    if (suppressions.length === 0) return;
    // In this transaction, and never twice (ON CONFLICT): a redelivered or replayed batch adds
    // nothing, and an address already listed (by hand or earlier) keeps its entry.
    await client.query(
      `INSERT INTO suppressions (tenant_id, email, reason, source)
       SELECT t, lower(e), r, s FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(t, e, r, s)
       ON CONFLICT (tenant_id, email) DO NOTHING`,
      [
        suppressions.map((x) => x.tenantId),
        suppressions.map((x) => x.email),
        suppressions.map((x) => x.reason),
        suppressions.map((x) => x.source),
      ],
    );
  },
  async eraseRecipient(client, { tenantId, address }) {
    // The soft bounces counted toward the soft-bounce rule name the address (SPEC §21).
    await client.query('DELETE FROM soft_bounces WHERE tenant_id = $1 AND email = $2', [tenantId, address]);
    const r = await client.query('DELETE FROM suppressions WHERE tenant_id = $1 AND email = $2', [
      tenantId,
      address,
    ]);
    return { suppressions: r.rowCount ?? 0 };
  },
};

/** Deletes up to `limit` soft bounces older than `cutoff` (past any window the rule looks at). */
export const pruneSoftBounces = batchPruner({ table: 'soft_bounces', at: 'occurred_at', key: 'ctid' });
