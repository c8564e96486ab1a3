import { deleteContactsTo, rekeyErasedUnsubscribes } from '@tern/bulk';
import type { ErasureResult } from '@tern/contracts';
import { eraseInbound } from '@tern/inbound';
import { withTransaction } from '@tern/kernel';
import { type Keyring, recordErasure } from '@tern/privacy';
import { type Erasure, emailIdsTo, eraseInboundEvents, PG_READ_MODELS } from '@tern/read-models';
import { eraseSendContent, sendIdsTo } from '@tern/sending';
import { notifyReadModel } from '@tern/stores';
import { eraseWebhookDeliveries } from '@tern/webhooks';
import type pg from 'pg';

/**
 * Erasure of one address in one tenant (SPEC §14; docs/architecture.md § "Personal data and
 * erasure"). One transaction, in which each table's owner scrubs its own rows: the keyring and
 * the erasure record (packages/privacy), every read model of the registry (packages/read-models),
 * the sending side (packages/sending), the webhook deliveries (packages/webhooks), the contacts and
 * the unsubscribe records (packages/bulk):
 *
 * - the keyring deletes the recipient's data keys (every month): the event log's sealed copies of
 *   its address and subjects cannot be opened any more, so `npm run rebuild` brings them back as null;
 * - records the keyed hash in `erased_recipients` (the audit record of the erasure and the
 *   suppression a later send meets; no clear address is kept);
 * - scrubs every read model holding the address or what was sent to it: the contact (and its
 *   audience memberships), the log entries (`to_email`, `subject`, the fold state), the timeline's
 *   `email.queued` data, the content of sends (`outgoing_emails.message`) and their attachments (`email_attachments`), sandbox messages,
 *   webhook delivery records (body, recipient, the stored event), the clear suppression entry,
 *   and re-keys campaign unsubscribe records to the keyed hash (their count stays); dead letters
 *   naming the address in this tenant lose their payload.
 *
 * Every event's personal fields (`PERSONAL_FIELDS` of `@tern/contracts`: a bounce's diagnostic, a
 * clicked URL…) are scrubbed from the timeline and from webhook delivery records, which also lose
 * the endpoint's answers; the address is taken out of the cc, bcc and reply-to of other people's
 * mail (content and sandbox copies); the email → key map (`email_keys`) rows go with the keys.
 * After the commit the keyring rewrites `data_keys` into a new file: the deleted wrapped keys stay
 * in no data file of the table (docs/architecture.md § "What WAL and backups keep").
 *
 * Counters (`email_log_counts`) and ClickHouse rollups hold no personal field: they are left
 * alone, so counts and analytics stay as they were.
 */
export async function eraseRecipient(
  pool: pg.Pool,
  keyring: Keyring,
  tenantId: string,
  email: string,
  opts: { rewriteKeys?: boolean; log?: (error: unknown) => void } = {},
): Promise<ErasureResult & { firstTime: boolean }> {
  const address = email.trim().toLowerCase();
  const rh = keyring.recipientHash(tenantId, address);
  const done = await withTransaction(pool, async (client) => {
    const dataKeys = await keyring.eraseKeys(tenantId, address, client);
    const firstTime = await recordErasure(client, tenantId, rh);
    const contactIds = await deleteContactsTo(client, tenantId, address);
    const contacts = contactIds.length;
    // The emails of this recipient: by their log entry, and by the send's content (a send not yet
    // projected has no log entry), where it is the (first) `to`.
    const ids = [
      ...new Set([
        ...(await emailIdsTo(client, tenantId, address)),
        ...(await sendIdsTo(client, tenantId, address)),
      ]),
    ];
    // The address out of every message naming it (SPEC §22: per address): a message to several
    // people stays theirs; the recipient's own sends lose their content.
    const { sandboxMessages, mentioned } = await eraseSendContent(client, tenantId, address, ids);
    const erasure: Erasure = { tenantId, address, recipientHash: rh, emailIds: ids, mentioned, contactIds };
    const counts: Record<string, number> = {};
    for (const model of PG_READ_MODELS) Object.assign(counts, await model.eraseRecipient?.(client, erasure));
    // Received mail the address sent or received (SPEC §24); its webhook deliveries go with the emails'.
    const inboundIds = await eraseInbound(client, tenantId, rh);
    await eraseInboundEvents(client, tenantId, inboundIds);
    const webhookDeliveries = await eraseWebhookDeliveries(
      client,
      tenantId,
      address,
      [...ids, ...inboundIds],
      mentioned,
    );
    const unsubscribes = await rekeyErasedUnsubscribes(client, tenantId, address, rh);
    // The api processes' memoised log pages of this tenant may hold the address (delivered at commit).
    await notifyReadModel(client, { kind: 'logs', tenants: [tenantId] });
    return {
      firstTime,
      counts: {
        dataKeys,
        contacts,
        emails: counts.emails ?? 0,
        sandboxMessages,
        webhookDeliveries,
        suppressions: counts.suppressions ?? 0,
        unsubscribes,
      },
    };
  });
  keyring.invalidate(tenantId, rh);
  // After the transaction's connection went back: an embedded PGlite has only one.
  if (done.counts.dataKeys > 0 || opts.rewriteKeys) await keyring.rewriteKeys(opts.log);
  return { erased: true, ...done };
}
