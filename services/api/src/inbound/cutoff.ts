import { retentionCutoff } from '@tern/domain';

/**
 * The tenant's retention cut-off now (SPEC §9) for the inbound reader: received mail older than it
 * reads as gone at once, as sent mail does (`GET /emails/:id`, the logs), whether or not the
 * worker's retention job has deleted it yet.
 */
export function inboundCutoff(
  retentionOverride: (tenantId: string) => Promise<number | null>,
  now: () => Date,
  defaultRetentionDays: number,
): (tenantId: string) => Promise<Date> {
  return async (tenantId) =>
    retentionCutoff(now(), (await retentionOverride(tenantId)) ?? defaultRetentionDays);
}
