import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createApiApp,
  createCampaignFanout,
  createRetentionJob,
  createSendingApp,
  createSequenceScheduler,
  devTlsPair,
  fastifyTrustProxy,
  getTemplate,
  outgoingMailer,
  type SubmissionServer,
  startSubmissionServer,
  suppressionCheck,
  suppressionCheckMany,
  type WebhookRouteOptions,
} from '@tern/api';
import { createJwtVerifier, REDACT_OPTIONS, requestLogFields } from '@tern/auth';
import { type BounceMailbox, createBounceMailbox } from '@tern/bounce';
import type { Config } from '@tern/config';
import { dashboardRoutes } from '@tern/dashboard';
import { createDispatcher, DISPATCHER_GROUP, type Dispatcher } from '@tern/dispatcher';
import {
  createDnsChecker,
  createSendingDomains,
  createSigningKeys,
  type KeySealer,
  type SendingDomains,
  spfRecord,
} from '@tern/domains';
import {
  createKafkaEventLog,
  createPostgresEventLog,
  type EventLog,
  type EventStream,
} from '@tern/event-log';
import { installErrorHandlers, NotReadyError, type ReadinessCheck, registerHealthRoutes } from '@tern/http';
import { ingestRoutes } from '@tern/ingest';
import { createKeyring, type Keyring, sealedEventStream } from '@tern/privacy';
import { createProjector, createPruneJob, type Projector } from '@tern/projector';
import { createSandboxProvider, createSender, createSmtpProvider, type Sender } from '@tern/sender';
import {
  type ClickHouseStore,
  createClickHouse,
  createPostgres,
  createReadModelFeed,
  migrateClickHouse,
  migratePostgres,
  type PostgresStore,
  releaseIdleMemory,
} from '@tern/stores';
import { createSecretBox, type SecretBox } from '@tern/webhooks';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { createIdleMemoryRelease } from './idle-memory.js';
import { createMetrics, installMetrics } from './metrics.js';
import { resolvePublicUrl } from './public-url.js';
import { CORE_SERVICES, SERVICES, type Service } from './services.js';
import { type CloseOptions, type CloseResult, type Closer, closeInOrder } from './shutdown.js';

export { resolvePublicUrl, SERVICES, type Service };

/** Requests an ingest worker serves on one keep-alive connection before asking the client to reconnect. */
export const CLUSTER_REQUESTS_PER_CONNECTION = 100;

/** The projector's consumer group; every projector instance joins it. */
export const PROJECTOR_GROUP = 'tern-projector';

// Source (src/) and bundle (dist/) both sit two levels below the repository root.
const here = dirname(fileURLToPath(import.meta.url));
export const MIGRATIONS = {
  postgres: resolve(here, '../../../infra/migrations/postgres'),
  clickhouse: resolve(here, '../../../infra/migrations/clickhouse'),
};
/** The dashboard's build (`npm run build` → `vite build`), served at `GET /` by the api service. */
export const DASHBOARD_DIR = resolve(here, '../../../services/dashboard/dist');

export interface RuntimeSecrets {
  jwtSecret?: string | undefined;
  ingestToken?: string | undefined;
  trackingSecret?: string | undefined;
  /** Seals webhook secrets at rest; required by the api and the dispatcher. */
  webhookSecretsKey?: string | undefined;
  /** ENCRYPTION_KEY: wraps the data keys of personal fields in the event log (SPEC §14). */
  encryptionKey?: string | undefined;
  /** METRICS_TOKEN: bearer token of `GET /metrics`; unset in production → no `/metrics`. */
  metricsToken?: string | undefined;
}

/** Test and bench knobs of the sender (retry schedule, polling); production uses the defaults. */
export interface RuntimeOptions {
  sender?: { retryDelaysMs?: readonly number[]; pollIntervalMs?: number; leaseMs?: number };
  /** Test hook (NODE_ENV=test only, see main.ts): one component's close hangs. */
  shutdownHang?: ShutdownHang;
}

/** A component whose close never finishes (`promise`) or blocks the main thread on a futex (`block`). */
export interface ShutdownHang {
  component: string;
  mode: 'promise' | 'block';
}

function hang(mode: ShutdownHang['mode']): () => Promise<unknown> {
  return async () => {
    if (mode === 'block') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    await new Promise(() => {});
  };
}

export interface Runtime {
  app: FastifyInstance;
  url: string;
  stores: { postgres: string; clickhouse: string; eventLog: string };
  /** The SMTP submission port (SPEC §22), when it runs. */
  smtpSubmissionPort?: number;
  /** The bounce mailbox's SMTP port (SPEC §21), when it runs. */
  bouncePort?: number;
  /**
   * Settles once what starts after the server listens has started (the projector's consumer
   * group join); rejects if it failed — the process should then exit.
   */
  started: Promise<void>;
  /**
   * Graceful stop: no new requests, in-flight ones finish, the current batch commits, stores
   * close — one component after the other; with a deadline, one that does not finish in its share
   * is left behind (named in the result) and the next is closed.
   */
  close(opts?: CloseOptions): Promise<CloseResult>;
}

/**
 * Refuses the combinations an embedded store cannot serve: PGlite and chDB belong to one
 * process, so services split across processes need the servers.
 */
export function checkTopology(config: Config, services: ReadonlySet<Service>): void {
  const all = CORE_SERVICES.every((s) => services.has(s));
  if (!all && !config.databaseUrl) {
    throw new Error(
      `Starting ${[...services].join('+')} alone needs DATABASE_URL: the embedded Postgres (PGlite) belongs to one process; run \`npm start\` for everything in one process`,
    );
  }
  if (services.has('submission') && config.smtpSubmissionPort === undefined && services.size === 1) {
    throw new Error(
      'Starting submission needs SMTP_SUBMISSION_PORT (SMTP submission is off unless it is set)',
    );
  }
  const chUsers = ['projector', 'api'].filter((s) => services.has(s as Service));
  if (chUsers.length === 1 && !config.clickhouseUrl) {
    throw new Error(
      `Starting ${chUsers[0]} without api+projector in the same process needs CLICKHOUSE_URL: the embedded ClickHouse engine (chDB) belongs to one process`,
    );
  }
}

export async function startRuntime(
  config: Config,
  services: ReadonlySet<Service>,
  secrets: RuntimeSecrets,
  options: RuntimeOptions = {},
): Promise<Runtime> {
  checkTopology(config, services);
  const publicUrl = resolvePublicUrl(config, services);
  // Request lines keep Fastify's fields, with addresses in the URL masked (no personal datum in logs).
  const logger = pino({
    level: config.logLevel,
    redact: REDACT_OPTIONS,
    serializers: { req: requestLogFields },
  });
  if (!config.publicUrl && services.has('sender') && !services.has('api')) {
    logger.warn(
      { publicUrl },
      'PUBLIC_URL unset: tracking and unsubscribe links point at the default api address',
    );
  }
  const metrics = createMetrics();
  const closers: Closer[] = [];
  const readiness: ReadinessCheck[] = [];
  // Starts that go on after the server listens (the projector's group join).
  const background: Promise<void>[] = [];

  let pgStore: PostgresStore | undefined;
  let chStore: ClickHouseStore | undefined;
  let log: EventLog | undefined;
  // The typed, sealing stream over `log` every service reads and writes (docs/architecture.md).
  let stream: EventStream | undefined;
  let projector: Projector | undefined;
  let sender: Sender | undefined;
  let dispatcher: Dispatcher | undefined;
  let bounce: BounceMailbox | undefined;
  let bouncePort: number | undefined;
  // Work the idle memory release must wait for (below); set once it exists.
  let activity = () => {};
  try {
    pgStore = await createPostgres({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger });
    closers.unshift({ name: 'postgres', close: () => pgStore!.close() });
    await migratePostgres(pgStore.pool, MIGRATIONS.postgres);
    const pool = pgStore.pool;
    readiness.push({ name: 'postgres', check: async () => void (await pool.query('SELECT 1')) });

    if (services.has('projector') || services.has('api')) {
      chStore = createClickHouse({ clickhouseUrl: config.clickhouseUrl, dataDir: config.dataDir });
      closers.unshift({ name: 'clickhouse', close: () => chStore!.close() });
      await migrateClickHouse(chStore.client, MIGRATIONS.clickhouse);
      const ch = chStore.client;
      readiness.push({
        name: 'clickhouse',
        check: async () => {
          const result = await ch.ping();
          if (!result.success) throw result.error;
        },
      });
    }

    // Webhook secrets are sealed at rest with this key: the api and the dispatcher need it
    // (loadConfig already refuses a production start without it; dev generates one).
    // The same key seals the DKIM private keys of sending domains (its own derived AES key): the
    // api generates them, the sender signs with them (SPEC §20).
    let secretBox: SecretBox | undefined;
    let dkimSealer: KeySealer | undefined;
    if (services.has('api') || services.has('dispatcher') || services.has('sender')) {
      if (!secrets.webhookSecretsKey) {
        const who = services.has('api') ? 'api' : services.has('dispatcher') ? 'dispatcher' : 'sender';
        throw new Error(`WEBHOOK_SECRETS_KEY is required to run the ${who}`);
      }
      secretBox = createSecretBox(secrets.webhookSecretsKey);
      dkimSealer = createSecretBox(secrets.webhookSecretsKey, 'dkim keys');
    }
    // SPEC §20: in production with a real provider, mail must come from a verified domain.
    const requireVerifiedDomains = config.nodeEnv === 'production' && config.smtpUrl !== undefined;
    const runDispatcher = services.has('dispatcher');

    // Crypto-shredding (SPEC §14): every service reads and writes the log through the keyring, so
    // personal fields are sealed on append and opened on consume (docs/architecture.md).
    if (!secrets.encryptionKey) throw new Error('ENCRYPTION_KEY is required to run Tern');
    const keyring: Keyring = createKeyring({ pool, encryptionKey: secrets.encryptionKey });

    // The bounce mailbox runs where it is asked for and has a port (SPEC §21: off unless set).
    const runBounce = services.has('bounce') && config.bounceSmtpPort !== undefined;
    if (
      services.has('bounce') &&
      config.bounceSmtpPort === undefined &&
      !CORE_SERVICES.every((s) => services.has(s))
    )
      throw new Error('BOUNCE_SMTP_PORT is required to run the bounce mailbox (--services=bounce)');

    // The API appends sends, cancels and tracking events; the sender appends outcomes; the
    // dispatcher reads the log; the bounce mailbox appends delivery feedback.
    if (
      runBounce ||
      services.has('ingest') ||
      services.has('projector') ||
      services.has('api') ||
      services.has('sender') ||
      services.has('submission') ||
      runDispatcher
    ) {
      if (config.kafkaBrokers) {
        log = createKafkaEventLog({
          brokers: config.kafkaBrokers,
          topic: config.kafkaTopic,
          partitions: config.kafkaPartitions,
          // Two partitions folded side by side: the projector alternates between its own CPU and
          // Postgres, so one partition at a time leaves both half idle (bench/README.md).
          partitionConcurrency: 2,
          logger,
        });
      } else {
        // Embedded, every append is this process's own and wakes its consumers at once: an idle
        // consumer need not look more than once a second (issue 10: an idle `npm start`).
        const pgLog =
          pgStore.kind === 'pglite'
            ? createPostgresEventLog({ pool, pollIntervalMs: 1_000, singleWriter: true })
            : createPostgresEventLog({ pool, pollIntervalMs: 100 });
        await pgLog.ensureSchema();
        log = pgLog;
      }
      closers.unshift({ name: 'event-log', close: () => log!.close() });
      const eventLog = log;
      stream = sealedEventStream(log, keyring);
      readiness.push({ name: 'event-log', check: () => eventLog.ping() });
    }

    // One TRACKING_SECRET signs tracking links (sender) and unsubscribe links, and checks both (api).
    const trackingSecret = secrets.trackingSecret;
    if ((services.has('api') || services.has('sender') || runBounce) && !trackingSecret)
      throw new Error('TRACKING_SECRET is required to run api, sender or bounce');

    let app: FastifyInstance;
    let domains: SendingDomains | undefined;
    if (services.has('api')) {
      // Sending domains (SPEC §20): records fixed when a domain is added; one poller re-checks them
      // (any number of instances share it through claims).
      const bounceMxHost = config.bounceMxHost ?? new URL(publicUrl).hostname;
      domains = createSendingDomains({
        pool,
        log: stream!,
        dns: createDnsChecker({ servers: config.dnsServers }),
        sealer: dkimSealer!,
        records: {
          bounceSubdomain: config.bounceSubdomain,
          bounceMxHost,
          spf: spfRecord({
            spfInclude: config.spfInclude,
            relayHost: config.smtpUrl ? new URL(config.smtpUrl).hostname : undefined,
            fallbackHost: bounceMxHost,
          }),
        },
        now: () => new Date(),
        logger,
      });
      domains.start();
      const checks = domains;
      closers.unshift({ name: 'domain-checks', close: () => checks.stop() });
      const jwt = jwtVerifierOf(config, secrets);
      const webhooks: WebhookRouteOptions = {
        secretBox: secretBox!,
        urlPolicy: { allowPrivate: config.webhookAllowPrivate },
      };
      // Repeated reads are memoised on what the read models' writers announce (issue 10): a
      // connection of its own on a server; PGlite's one session hears its own commits.
      const readModel = createReadModelFeed({
        pool,
        connection: pgStore.kind === 'pglite' ? 'shared' : 'dedicated',
        logger,
      });
      closers.unshift({ name: 'read-model-feed', close: () => readModel.close() });
      app = await createApiApp({
        readModel,
        webhooks,
        pool,
        trackingSecret: trackingSecret!,
        openDedupSeconds: config.openDedupSeconds,
        ch: chStore!.client,
        jwt,
        retentionDays: config.retentionDays,
        sendRatePerSecond: config.sendRatePerSecond,
        rateLimit:
          config.rateLimitPerMinute > 0 ? { max: config.rateLimitPerMinute, timeWindowMs: 60_000 } : false,
        logger,
        readiness,
        sending: { log: stream! },
        keyring,
        domains: { domains: domains! },
        domainPolicy: { requireVerified: requireVerifiedDomains },
        providers: {
          sesTopicArns: config.sesTopicArns,
          sendgridPublicKey: config.sendgridWebhookPublicKey,
          postmark: config.postmarkWebhook,
          mailgunSigningKey: config.mailgunWebhookSigningKey,
          resendSecret: config.resendWebhookSecret,
        },
        trustProxy: config.trustProxy,
        publicUrl,
        documentIngest: services.has('ingest'),
      });
      // Physical deletion of expired entries; one instance at a time runs it (advisory lock).
      const retention = createRetentionJob({
        pool,
        ch: chStore!.client,
        now: () => new Date(),
        defaultRetentionDays: config.retentionDays,
        keyring,
        logger,
      });
      retention.start();
      closers.unshift({ name: 'retention-job', close: async () => retention.stop() });
      // Campaign fan-out and sequence steps (SPEC §15): durable jobs in Postgres, any number of
      // instances (SKIP LOCKED + leases); their emails take the send path of POST /emails/send
      // (outgoing_emails, then email.queued; the sender does the rest).
      const bulk = {
        pool,
        mailer: outgoingMailer(pool, stream!),
        now: () => new Date(),
        publicUrl,
        trackingSecret: trackingSecret!,
        logger,
      };
      const fanout = createCampaignFanout(bulk);
      const sequences = createSequenceScheduler(bulk);
      fanout.start();
      sequences.start();
      closers.unshift({ name: 'campaign-fanout', close: () => fanout.stop() });
      closers.unshift({ name: 'sequence-scheduler', close: () => sequences.stop() });
      // The web dashboard (SPEC §18): static files over the same public API, on the same port.
      await app.register(dashboardRoutes, { dir: DASHBOARD_DIR });
    } else {
      app = Fastify({
        loggerInstance: logger as FastifyBaseLogger,
        requestIdHeader: 'x-request-id',
        trustProxy: fastifyTrustProxy(config.trustProxy),
        // node:cluster hands out connections, not requests, round-robin: a keep-alive client would
        // stay with one worker for good. Renewing each connection after this many requests lets
        // the next one go to the next worker (issue 32; docs/deploy.md).
        ...(cluster.isWorker ? { maxRequestsPerSocket: CLUSTER_REQUESTS_PER_CONNECTION } : {}),
      });
      installErrorHandlers(app);
      registerHealthRoutes(app, readiness);
    }
    const metricsServed = installMetrics(
      app,
      metrics,
      async () => {
        if (projector) metrics.projectorLag.set(await projector.lag());
        if (dispatcher) metrics.dispatcherLag.set(await dispatcher.lag());
        if (sender) metrics.providerFailing.set(sender.providerHealth().failing ? 1 : 0);
      },
      { token: secrets.metricsToken, production: config.nodeEnv === 'production' },
    );
    if (!metricsServed) logger.warn('GET /metrics is off: set METRICS_TOKEN to serve it in production');
    if (services.has('ingest')) {
      if (!secrets.ingestToken) throw new Error('INGEST_TOKEN is required to run ingest');
      await app.register(ingestRoutes, {
        log: stream!,
        ingestToken: secrets.ingestToken,
        onAccepted: (n) => metrics.eventsIngested.inc(n),
      });
    }
    if (services.has('projector')) {
      projector = createProjector({
        pool,
        ch: chStore!.client,
        log: stream!,
        group: PROJECTOR_GROUP,
        logger,
        stallAfterMs: config.projectorStallSeconds * 1000,
        onBatch(stats) {
          activity();
          metrics.batchDuration.observe(stats.durationMs);
          metrics.eventsProjected.inc({ outcome: 'applied' }, stats.applied);
          metrics.eventsProjected.inc({ outcome: 'duplicate' }, stats.duplicates);
          metrics.eventsProjected.inc({ outcome: 'dead_letter' }, stats.deadLettered);
        },
      });
      // The projector joins its consumer group in the background (issue 32, item 2): after a
      // kill -9 the group waits out the dead member's session (up to sessionTimeout, 30 s), and the
      // api must not wait with it. Reads answer from the last committed projection meanwhile
      // (X-Tern-As-Of says how old), and /ready says the projection is catching up.
      const running = projector;
      const startedAt = performance.now();
      let joined = false;
      const starting = running.start().then(
        () => {
          joined = true;
          logger.info(
            { joinMs: Math.round(performance.now() - startedAt) },
            'projector joined its consumer group',
          );
        },
        (error: unknown) => {
          logger.error({ err: error }, 'projector failed to start');
          throw error;
        },
      );
      background.push(starting);
      closers.unshift({
        name: 'projector',
        close: async () => {
          await starting.catch(() => undefined);
          await running.stop();
        },
      });
      // processed_events and the Postgres-table log are pruned past the dedup window (issue 9, item 7).
      const prune = createPruneJob({
        pool,
        group: PROJECTOR_GROUP,
        dedupWindowMs: config.dedupWindowDays * 24 * 3600 * 1000,
        eventLogTable: config.kafkaBrokers ? undefined : 'event_log',
        logger,
      });
      prune.start();
      closers.unshift({ name: 'prune-job', close: () => prune.stop() });
      // No progress while the log has a lag: /ready says so (issue 9, item 1).
      readiness.push({
        name: 'projector',
        check: async () => {
          if (!joined)
            return 'catching up: joining the consumer group; reads answer the last committed projection (X-Tern-As-Of)';
          const reason = await running.stalled();
          if (reason) throw new NotReadyError(reason);
        },
      });
    }
    if (services.has('sender')) {
      const senderOptions = options.sender ?? {};
      sender = createSender({
        pool,
        log: stream!,
        provider: config.smtpUrl
          ? createSmtpProvider({
              url: config.smtpUrl,
              pool:
                config.smtpMaxConnections === 0
                  ? false
                  : { maxConnections: config.smtpMaxConnections, maxMessages: config.smtpMaxMessages },
            })
          : createSandboxProvider({ pool }),
        isSuppressed: suppressionCheck(keyring),
        suppressedAmong: suppressionCheckMany(keyring),
        getTemplate,
        signingKeys: createSigningKeys({ pool, sealer: dkimSealer! }),
        requireVerifiedDomain: requireVerifiedDomains,
        tracking: { secret: trackingSecret!, publicUrl },
        bounceDomain: config.bounceDomain,
        logger,
        onProviderFault: (fault) => metrics.providerFaults.inc({ step: fault.step, code: fault.code }),
        defaultSendRatePerSecond: config.sendRatePerSecond,
        ...(senderOptions.retryDelaysMs ? { retryDelaysMs: senderOptions.retryDelaysMs } : {}),
        ...(senderOptions.pollIntervalMs ? { pollIntervalMs: senderOptions.pollIntervalMs } : {}),
        ...(senderOptions.leaseMs ? { leaseMs: senderOptions.leaseMs } : {}),
      });
      await sender.start();
      const running = sender;
      closers.unshift({ name: 'sender', close: () => running.stop() });
      // A relay that refuses Tern (a wrong password, unreachable, refusing the envelope sender)
      // makes the instance not ready: its mail is only retried (issue 24 item 13).
      readiness.push({
        name: 'mail-provider',
        check: async () => {
          const health = running.providerHealth();
          if (health.failing)
            throw new NotReadyError(
              `mail provider failing since ${health.since.toISOString()}: ${health.fault.step} → ${health.fault.code} (${health.faults} in a row)`,
            );
        },
      });
    }
    if (runDispatcher) {
      dispatcher = createDispatcher({
        pool,
        log: stream!,
        group: DISPATCHER_GROUP,
        secretBox: secretBox!,
        allowPrivate: config.webhookAllowPrivate,
        // Delivery records (request bodies hold personal data) live as long as the delivery log.
        recordRetentionMs: config.retentionDays * 86_400_000,
        logger,
        onAttempt(attempt) {
          metrics.webhookAttempts.inc({ outcome: attempt.outcome });
          metrics.webhookAttemptDuration.observe(attempt.result.durationMs);
        },
      });
      await dispatcher.start();
      const running = dispatcher;
      closers.unshift({ name: 'dispatcher', close: () => running.stop() });
    }
    if (runBounce) {
      bounce = createBounceMailbox({
        pool,
        log: stream!,
        secret: trackingSecret!,
        bounceDomain: config.bounceDomain,
        host: config.host,
        port: config.bounceSmtpPort!,
        maxBytes: config.bounceSmtpMaxBytes,
        ratePerMinute: config.bounceSmtpRatePerMinute,
        hostname: config.bounceMxHost ?? new URL(publicUrl).hostname,
        logger,
      });
      bouncePort = await bounce.start();
      const running = bounce;
      closers.unshift({ name: 'bounce', close: () => running.stop() });
      logger.info({ port: bouncePort }, 'bounce mailbox listening');
    }
    // With the embedded engine, an idle process gives back the memory it does not use (issue 10:
    // idle RSS): glibc's free memory and the pages chDB's library touched once at load.
    if (chStore?.kind === 'chdb') {
      const idle = createIdleMemoryRelease({
        idleMs: 15_000,
        checkMs: 5_000,
        now: Date.now,
        release: () => releaseIdleMemory(undefined, logger),
        onRelease: (released) =>
          logger.debug(
            { rssKiB: released.rssKiB, libraryBytes: released.libraryBytes, trimmed: released.trimmed },
            'idle: memory released',
          ),
      });
      app.addHook('onRequest', async () => idle.touch());
      activity = () => idle.touch();
      idle.start();
      closers.unshift({ name: 'idle-memory-release', close: async () => idle.stop() });
    }
    // SMTP submission (SPEC §22): each message goes through POST /emails/send of the api app in
    // this process, or — run alone — of a sending-only app with the same guards (never listened on).
    let submission: SubmissionServer | undefined;
    if (services.has('submission') && config.smtpSubmissionPort !== undefined) {
      let target = app;
      if (!services.has('api')) {
        const sendingApp = await createSendingApp({
          pool,
          jwt: jwtVerifierOf(config, secrets),
          retentionDays: config.retentionDays,
          rateLimit:
            config.rateLimitPerMinute > 0 ? { max: config.rateLimitPerMinute, timeWindowMs: 60_000 } : false,
          logger,
          sending: { log: stream! },
          domainPolicy: { requireVerified: requireVerifiedDomains },
        });
        closers.unshift({ name: 'submission-app', close: () => sendingApp.close() });
        target = sendingApp;
      }
      const tls =
        config.smtpTlsCert !== undefined && config.smtpTlsKey !== undefined
          ? { cert: readFileSync(config.smtpTlsCert), key: readFileSync(config.smtpTlsKey) }
          : await devTlsPair(config.dataDir, new URL(publicUrl).hostname);
      submission = await startSubmissionServer({
        app: target,
        port: config.smtpSubmissionPort,
        host: config.host,
        tls,
        requireTls: config.nodeEnv === 'production',
        hostname: new URL(publicUrl).hostname,
        logger,
      });
      const running = submission;
      closers.unshift({ name: 'submission', close: () => running.close() });
    }
    // The SMTP server stops taking mail first, then the HTTP server (in-flight requests finish), then
    // the dispatcher, sender and projector, then stores. SMTP starts before HTTP listens, so a
    // process whose /health answers takes mail too.
    closers.splice(submission ? 1 : 0, 0, { name: 'http', close: () => app.close() });
    const hung = options.shutdownHang && closers.find((c) => c.name === options.shutdownHang!.component);
    if (hung) hung.close = hang(options.shutdownHang!.mode);
    await app.listen({ port: config.port, host: config.host });

    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    return {
      app,
      url: `http://${config.host}:${port}`,
      ...(bouncePort !== undefined ? { bouncePort } : {}),
      stores: {
        postgres: pgStore.kind === 'pglite' ? 'PGlite' : 'Postgres server',
        clickhouse: chStore ? (chStore.kind === 'chdb' ? 'chDB' : 'ClickHouse server') : 'none',
        eventLog: log ? (config.kafkaBrokers ? 'Kafka' : 'Postgres-table') : 'none',
      },
      ...(submission ? { smtpSubmissionPort: submission.port } : {}),
      started: Promise.all(background).then(() => undefined),
      close: (opts) => closeAll(closers, opts),
    };
  } catch (error) {
    await closeAll(closers);
    throw error;
  }
}

function jwtVerifierOf(config: Config, secrets: RuntimeSecrets) {
  const maxLifetimeMs = config.jwtMaxLifetimeDays * 24 * 3600 * 1000;
  return createJwtVerifier(
    secrets.jwtSecret
      ? { secret: secrets.jwtSecret, maxLifetimeMs }
      : config.jwtPublicKey
        ? { publicKey: config.jwtPublicKey, maxLifetimeMs }
        : { jwksUrl: config.jwtJwksUrl!, maxLifetimeMs },
  );
}

async function closeAll(closers: Closer[], opts: CloseOptions = {}): Promise<CloseResult> {
  const result = await closeInOrder(closers.splice(0), opts);
  return result;
}
