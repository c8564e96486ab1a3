import { mentionPattern, SCRUB_SPEC, scrubbedData } from '@tern/privacy';
import type pg from 'pg';

/**
 * What retention and erasure (SPEC §9, §14) do to webhook delivery records. A pending delivery is
 * the dispatcher's retry queue; finished ones it also sweeps itself after RETENTION_DAYS, but only
 * the retention job knows a tenant's shorter override (`EmailContentTable` of packages/read-models).
 */
export const WEBHOOK_DELIVERY_CONTENT = {
  table: 'webhook_deliveries',
  id: 'email_id',
  at: 'created_at',
  only: "x.status <> 'pending'",
} as const;

/**
 * Scrubs an erased recipient's webhook deliveries (by recipient, or by its emails), in the
 * erasure's transaction: the body, the recipient and the event's personal fields go, and what the
 * endpoints answered, which may echo the body they were sent. Answers the deliveries scrubbed.
 */
export async function eraseWebhookDeliveries(
  client: pg.ClientBase,
  tenantId: string,
  address: string,
  emailIds: readonly string[],
  mentioned: readonly string[] = [],
): Promise<number> {
  // Of another email naming the address: its events naming it as their recipient, or quoting it
  // anywhere (a whole-message diagnostic; the body as sent).
  const namesIt = (p: string) => `(lower(event->'data'->>'recipient') = $2 OR lower(event::text) ~ ${p}
                    OR lower(coalesce(request_body, '')) ~ ${p})`;
  await client.query(
    `UPDATE webhook_attempts SET response_excerpt = NULL
      WHERE response_excerpt IS NOT NULL AND delivery_id IN (
        SELECT id FROM webhook_deliveries
         WHERE tenant_id = $1 AND (lower(recipient) = $2 OR email_id = ANY($3::text[])
               OR (email_id = ANY($4::text[]) AND ${namesIt('$5')})))
        -- A receiver's answer echoing the address, whatever delivery it answered (issue 40 item 10).
        OR (lower(response_excerpt) ~ $5
            AND delivery_id IN (SELECT id FROM webhook_deliveries WHERE tenant_id = $1))`,
    [tenantId, address, emailIds, mentioned, mentionPattern(address)],
  );
  const eventScrubbed = `CASE WHEN jsonb_typeof(event->'data') = 'object'
                              THEN jsonb_set(event, '{data}', ${scrubbedData("event->'data'", "event->>'type'", '$4')})
                              ELSE event END`;
  const r = await client.query(
    `UPDATE webhook_deliveries
        SET request_body = NULL, recipient = NULL, event = ${eventScrubbed}
      WHERE tenant_id = $1 AND (lower(recipient) = $2 OR email_id = ANY($3::text[])
            OR (email_id = ANY($5::text[]) AND ${namesIt('$6')}))
        AND (request_body IS NOT NULL OR recipient IS NOT NULL OR event IS DISTINCT FROM ${eventScrubbed})`,
    [tenantId, address, emailIds, SCRUB_SPEC, mentioned, mentionPattern(address)],
  );
  return r.rowCount ?? 0;
}
