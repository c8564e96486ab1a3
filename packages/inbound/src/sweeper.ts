import { createPoller } from '@tern/jobs';
import { silentLogger } from '@tern/kernel';
import type { Keyring } from '@tern/privacy';
import { type CompleteDeps, completeStored } from './complete.js';
import { rawMessageOf } from './parse.js';
import { parseForStore, parseFull } from './parse-store.js';
import { deleteOrphanRawParts, openRaw } from './raw-parts.js';
import { listRoutes } from './routes.js';
import { deleteInbound, type SealedBlob, type UnannouncedInbound, unannouncedBefore } from './store.js';

/**
 * The sweeper of stored mail whose steps never ran to their end (SPEC §24): the store succeeded, a
 * later step did not (the log down at the append, a crash before the announced mark), so the
 * sending MTA was answered 451 or nothing. Its retry completes that row (the dedup lookup finds an
 * unannounced row however old); when it does not come within `graceMs`, the sweeper completes it
 * itself — route, forwards, `email.received`, the consumers, announced (`completeStored`) — with
 * the same ids a retry would use, so nothing is stored or announced twice. A row whose key is gone (erased, expired) is deleted; retention deletes the
 * rest like any received mail.
 */
export interface InboundSweeperOptions extends Omit<CompleteDeps, 'markAnnounced'> {
  keyring: Keyring;
  /** Age before an unannounced row is swept: longer than any arrival in progress (default 10 min; the SMTP session deadline is 5). */
  graceMs?: number;
  /** Pause between runs (default 60 s). */
  intervalMs?: number;
  /** Rows per run (default 100). */
  batchSize?: number;
  now?: () => Date;
}

export interface InboundSweepResult {
  /** Rows whose email.received was appended by this run. */
  announced: number;
  /** Rows deleted because their key is gone. */
  removed: number;
  /** Rows that failed (left for the next run). */
  failed: number;
  /** Raw parts deleted because their message row never came (a crash between the two). */
  orphanParts: number;
}

export interface InboundSweeper {
  runOnce(): Promise<InboundSweepResult>;
  start(): void;
  stop(): Promise<void>;
}

export const DEFAULT_SWEEP_GRACE_MS = 10 * 60 * 1000;
const MAX_FAILURES_IN_A_ROW = 5;

export function createInboundSweeper(opts: InboundSweeperOptions): InboundSweeper {
  const now = opts.now ?? (() => new Date());
  const logger = opts.logger ?? silentLogger;
  const graceMs = opts.graceMs ?? DEFAULT_SWEEP_GRACE_MS;

  const open = (m: UnannouncedInbound, label: string, blob: SealedBlob) =>
    opts.keyring.openBytes(m.tenantId, m.id, label, { rh: m.fromHash, p: m.period, ...blob });

  async function sweepOne(m: UnannouncedInbound): Promise<'announced' | 'removed'> {
    const [summary, content, raw] = await Promise.all([
      open(m, 'summary', m.summary),
      open(m, 'content', m.content),
      openRaw(opts.pool, opts.keyring, m),
    ]);
    if (!summary || !content || !raw) {
      await deleteInbound(opts.pool, m.tenantId, m.id);
      return 'removed';
    }
    const s = JSON.parse(summary.toString()) as { from: string; to: string[] };
    const c = JSON.parse(content.toString()) as { recipients?: string[] };
    const message = rawMessageOf(raw);
    const parsed = await parseForStore(message);
    const recipients = c.recipients ?? s.to;
    await completeStored(opts, {
      id: m.id,
      announced: false,
      tenantId: m.tenantId,
      receivedAt: m.receivedAt,
      from: s.from,
      to: s.to,
      recipients,
      size: m.size,
      auth: m.auth,
      inReplyTo: m.inReplyTo,
      parsed,
      raw: () => raw,
      routes: await listRoutes(opts.pool, m.tenantId),
      full: () => parseFull(message),
    });
    return 'announced';
  }

  async function runOnce(): Promise<InboundSweepResult> {
    const before = new Date(now().getTime() - graceMs);
    const result: InboundSweepResult = { announced: 0, removed: 0, failed: 0, orphanParts: 0 };
    // Parts sealed for an arrival whose row never came (its 250 never went out either).
    result.orphanParts = await deleteOrphanRawParts(opts.pool, before);
    const rows = await unannouncedBefore(opts.pool, before, opts.batchSize ?? 100);
    // A row that fails is left for the next run and the others go on (one bad row never blocks the
    // rest); a few failures in a row end the run (the log is likely still down).
    let failedInARow = 0;
    for (const m of rows) {
      try {
        result[await sweepOne(m)] += 1;
        failedInARow = 0;
      } catch (error) {
        result.failed += 1;
        logger.warn(
          { err: error, inboundId: m.id },
          'inbound: sweeping a message failed; the next run retries',
        );
        if (++failedInARow >= MAX_FAILURES_IN_A_ROW) break;
      }
    }
    if (result.announced > 0 || result.removed > 0 || result.failed > 0 || result.orphanParts > 0)
      logger.info(result, 'inbound: unannounced messages swept');
    return result;
  }

  const poller = createPoller({
    name: 'inbound-sweeper',
    intervalMs: opts.intervalMs ?? 60_000,
    run: async () => {
      await runOnce();
    },
    onError: (error) => logger.warn({ err: error }, 'inbound: sweep failed; the next run retries'),
  });
  return { runOnce, start: () => poller.start(), stop: () => poller.stop() };
}
