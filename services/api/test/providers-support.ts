// Fixtures of the provider-notification tests (SPEC §21): the providers' side (provider-senders.ts)
// and a sending world whose app takes their notifications over a real socket; the emails they name.
import type { DeliveryEvent } from '@tern/contracts';
import { attemptEvents, queuedEvent } from '@tern/domain';
import type pg from 'pg';
import { openProviderSenders, type ProviderSenders } from './provider-senders.js';
import { openSendingWorld, type SendingWorld } from './sending-support.js';

/** The providers' senders, and a sending world (no sender) whose app, listening at `base`, takes their notifications. */
export async function openProviderWorld(): Promise<{
  senders: ProviderSenders;
  world: SendingWorld;
  base: string;
}> {
  const senders = await openProviderSenders();
  const world = await openSendingWorld({
    sender: false,
    app: () => ({ features: { providers: senders.options } }),
  });
  return { senders, world, base: await world.app.listen({ port: 0, host: '127.0.0.1' }) };
}

/** An email queued and sent (as the sender would have appended it): its Message-ID and relay id. */
export function sentEmail(tenantId: string, emailId: string, relayId?: string): DeliveryEvent[] {
  const at = new Date(Date.now() - 60_000);
  return [
    queuedEvent({ tenantId, emailId, at, toEmail: `${emailId}@example.com`, subject: 'hello' }),
    attemptEvents(tenantId, emailId, 1, new Date(at.getTime() + 1000)).sent({
      provider: 'smtp',
      messageId: `<${emailId}@tern.test>`,
      ...(relayId ? { providerMessageId: relayId } : {}),
    }),
  ];
}

/** A notification POSTed to `<base>/providers/<provider>`: the status and the JSON answer. */
export async function postNotification(
  base: string,
  provider: string,
  body: string,
  headers: Record<string, string>,
) {
  const res = await fetch(`${base}/providers/${provider}`, { method: 'POST', body, headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The email's status in the delivery log (null: no such email, or none yet). */
export async function emailStatus(pool: pg.Pool, tenantId: string, emailId: string): Promise<string | null> {
  const { rows } = await pool.query<{ status: string | null }>(
    'SELECT status FROM email_logs WHERE tenant_id = $1 AND id = $2',
    [tenantId, emailId],
  );
  return rows[0]?.status ?? null;
}
