// The sending pipeline of the tests, all real: Postgres (fresh database), chDB, an event log (the
// Postgres table, or Kafka), the query API with its sending routes, the projector and the sender
// with the sandbox provider. Only the clock of the API is the wall clock (scheduling is real time).
import { createHash } from 'node:crypto';
import { createEventStream, createPostgresEventLog, type EventLog, type EventStream } from '@tern/event-log';
import { createKeyring, type Keyring } from '@tern/privacy';
import { createProjector, type Projector } from '@tern/projector';
import { isSuppressed, suppressedAmong } from '@tern/read-models';
import {
  createSandboxProvider,
  createSender,
  type MailProvider,
  type Sender,
  type SenderOptions,
} from '@tern/sender';
import { getTemplate } from '@tern/templates';
import type { FastifyInstance } from 'fastify';
import { waitFor } from '../../../test/support/services.js';
import {
  type AppOverrides,
  bearer,
  buildApp,
  ENCRYPTION_KEY,
  openStores,
  type Stores,
  type TestClock,
  TRACKING_SECRET,
} from './support.js';

export { TRACKING_SECRET };
export const PUBLIC_URL = 'http://127.0.0.1:3999';

/** The wall clock, shaped like the tests' settable one (the sender and the due-list run in real time). */
export const wallClock: TestClock = {
  now: () => new Date(),
  set() {
    throw new Error('the wall clock cannot be set');
  },
  advance() {
    throw new Error('the wall clock cannot be moved');
  },
};

export interface SendingWorld {
  stores: Stores;
  log: EventStream;
  /** Seals attachment bytes (the log itself stays unsealed here). */
  keyring: Keyring;
  app: FastifyInstance;
  projector: Projector;
  senders: Sender[];
  startSender(overrides?: Partial<SenderOptions> & { provider?: MailProvider }): Promise<Sender>;
  close(): Promise<void>;
}

export async function openSendingWorld(
  opts: {
    log?: (stores: Stores) => Promise<EventLog>;
    sender?: Partial<SenderOptions> | false;
    /** More of the app's deps, built once the stores and the log exist (e.g. sending domains). */
    app?: (stores: Stores, log: EventStream) => AppOverrides;
  } = {},
): Promise<SendingWorld> {
  const stores = await openStores();
  const rawLog =
    (await opts.log?.(stores)) ??
    (await (async () => {
      const pgLog = createPostgresEventLog({ pool: stores.pool, pollIntervalMs: 20 });
      await pgLog.ensureSchema();
      return pgLog;
    })());
  // Not sealed: these tests read the log's content as sent.
  const log = createEventStream(rawLog);
  // The key of the app's own keyring (`buildApp`): erasure finds the keys the sends created.
  const keyring = createKeyring({ pool: stores.pool, encryptionKey: ENCRYPTION_KEY });
  const app = await buildApp(
    stores,
    wallClock,
    { limits: { rateLimit: false }, features: { sending: { log, keyring } } },
    opts.app?.(stores, log) ?? {},
  );
  const projector = createProjector({
    pool: stores.pool,
    ch: stores.ch,
    log,
    group: 'projector',
    maxWaitMs: 20,
  });
  await projector.start();
  const senders: Sender[] = [];
  async function startSender(overrides: Partial<SenderOptions> = {}): Promise<Sender> {
    const sender = createSender({
      pool: stores.pool,
      log,
      provider: createSandboxProvider({ pool: stores.pool, delayedRetryMs: 200 }),
      isSuppressed,
      suppressedAmong,
      getTemplate,
      keyring,
      tracking: { secret: TRACKING_SECRET, publicUrl: PUBLIC_URL },
      pollIntervalMs: 50,
      retryDelaysMs: [100, 100, 100, 100, 100],
      ...overrides,
    });
    await sender.start();
    senders.push(sender);
    return sender;
  }
  if (opts.sender !== false) await startSender(opts.sender ?? {});
  return {
    stores,
    log,
    keyring,
    app,
    projector,
    senders,
    startSender,
    async close() {
      for (const s of senders.splice(0)) await s.stop();
      await projector.stop();
      await app.close();
      await log.close();
      await stores.close();
    },
  };
}

export type EmailDetailBody = {
  id: string;
  status: string;
  toEmail: string;
  subject: string;
  provider: string | null;
  messageId: string | null;
  opens: number;
  clicks: number;
  from: string | null;
  cc: string[];
  bcc: string[];
  /** Every `to` (SPEC §22), and each recipient's own last outcome. */
  to: string[];
  recipients: { email: string; type: string; status: string }[];
  scheduledAt: string | null;
  projectId: string | null;
  events: { type: string; occurredAt: string; data: Record<string, unknown> }[];
};

export async function getEmail(
  app: FastifyInstance,
  auth: string,
  id: string,
): Promise<EmailDetailBody | null> {
  const res = await app.inject({ url: `/emails/${id}`, headers: bearer(auth) });
  return res.statusCode === 200 ? (res.json() as EmailDetailBody) : null;
}

/** Waits until the email's timeline ends in `status` (and holds every type in `types`). */
export async function waitForStatus(
  app: FastifyInstance,
  auth: string,
  id: string,
  status: string,
  types: string[] = [],
  timeoutMs = 15_000,
): Promise<EmailDetailBody> {
  return waitFor(
    async () => {
      const e = await getEmail(app, auth, id);
      return e && e.status === status && types.every((t) => e.events.some((x) => x.type === t)) ? e : null;
    },
    { timeoutMs, description: `${id} ${status}` },
  );
}

/** How a stored or kept message describes an attachment of `content`: its size and SHA-256 (hex). */
export const attachmentDescription = (
  filename: string,
  contentType: string,
  contentId: string | null,
  content: Buffer,
) => ({
  filename,
  contentType,
  contentId,
  size: content.length,
  sha256: createHash('sha256').update(content).digest('hex'),
});
