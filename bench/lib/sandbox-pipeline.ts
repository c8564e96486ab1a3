/**
 * The sandbox send path the sending benches (send, campaigns) run in their own process: the real
 * projector and a sender on the sandbox provider, each in a consumer group of its own, and the
 * ingest app listening on 127.0.0.1 for their ceilings — the same three events per email (queued,
 * sent, delivered) posted to `POST /events`, no sender in the path.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { ClickHouseClient } from '@clickhouse/client';
import type { EventStream } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { createProjector } from '@tern/projector';
import { isSuppressed, suppressedAmong } from '@tern/read-models';
import { createSandboxProvider, createSender } from '@tern/sender';
import { getTemplate } from '@tern/templates';
import type pg from 'pg';
import { postJson } from './sending.js';

export interface SandboxPipeline {
  /** The sandbox sender (a bench may stop it early to hand the due-list to another sender). */
  sender: { stop(): Promise<void> };
  /** POSTs `events` to the ingest app's `POST /events` (202 expected). */
  postEvents(events: readonly unknown[]): Promise<unknown>;
  /** Closes the ingest app, then stops the sender and the projector. */
  stop(): Promise<void>;
}

/**
 * Starts the projector (group `tern-bench.<bench>-projector-<tag>`), the sandbox sender
 * (`tern-bench.<bench>-sender-<tag>`) and the ingest app, in that order.
 */
export async function startSandboxPipeline(opts: {
  bench: string;
  tag: string;
  pool: pg.Pool;
  ch: ClickHouseClient;
  log: EventStream;
  /** The sender's link-tracking secret. */
  trackingSecret: string;
}): Promise<SandboxPipeline> {
  const { bench, tag, pool, ch, log } = opts;
  const projector = createProjector({ pool, ch, log, group: `tern-bench.${bench}-projector-${tag}` });
  await projector.start();
  const sender = createSender({
    pool,
    log,
    group: `tern-bench.${bench}-sender-${tag}`,
    provider: createSandboxProvider({ pool }),
    isSuppressed,
    suppressedAmong,
    getTemplate,
    tracking: { secret: opts.trackingSecret, publicUrl: 'http://127.0.0.1:3000' },
  });
  await sender.start();
  const ingestToken = randomBytes(24).toString('base64url');
  const ingest = await createIngestApp({ log, ingestToken });
  await ingest.listen({ host: '127.0.0.1', port: 0 });
  const ingestUrl = `http://127.0.0.1:${(ingest.server.address() as AddressInfo).port}/events`;
  return {
    sender,
    postEvents: (events) => postJson(ingestUrl, { events }, { authorization: `Bearer ${ingestToken}` }),
    async stop() {
      await ingest.close();
      await sender.stop();
      await projector.stop();
    },
  };
}

/** The three events the sandbox path produces for one email, for the ceilings through POST /events. */
export function sandboxDeliveryEvents(
  tenantId: string,
  emailId: string,
  queued: { toEmail: string; subject: string } = { toEmail: 'delivered@sandbox.test', subject: 'Bench' },
) {
  const at = (ms: number) => new Date(Date.now() + ms).toISOString();
  const base = { tenantId, emailId };
  return [
    { ...base, id: `${emailId}:q`, type: 'email.queued', occurredAt: at(0), data: queued },
    {
      ...base,
      id: `${emailId}:s`,
      type: 'email.sent',
      occurredAt: at(1),
      data: { provider: 'x', messageId: 'm' },
    },
    { ...base, id: `${emailId}:d`, type: 'email.delivered', occurredAt: at(2) },
  ];
}
