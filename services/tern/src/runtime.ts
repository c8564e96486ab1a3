import { type Config, ConfigError } from '@tern/config';
import type { EventLog } from '@tern/event-log';
import type { ReadinessCheck } from '@tern/http';
import { createKeyring, sealedEventStream } from '@tern/privacy';
import type { KeySealer } from '@tern/sending-domains';
import { releaseIdleMemory } from '@tern/stores';
import { createSecretBox, type SecretBox } from '@tern/webhooks';
import type { FastifyInstance } from 'fastify';
import type { RuntimeContext, RuntimeOptions, RuntimeSecrets, ShutdownHang } from './context.js';
import { createIdleMemoryRelease } from './idle-memory.js';
import { createMetrics, installMetrics } from './metrics.js';
import { DASHBOARD_DIR, MIGRATIONS } from './paths.js';
import { processLogger } from './process-logger.js';
import { resolvePublicUrl } from './public-url.js';
import { CLUSTER_REQUESTS_PER_CONNECTION, createBareApp, mountDashboard, startApi } from './roles/api.js';
import { startBounce } from './roles/bounce.js';
import { startDispatcher } from './roles/dispatcher.js';
import { startInbound } from './roles/inbound.js';
import { startIngest } from './roles/ingest.js';
import { PROJECTOR_GROUP, startProjector } from './roles/projector.js';
import { startSender } from './roles/sender.js';
import { startSubmission } from './roles/submission.js';
import { startWorker } from './roles/worker.js';
import { CORE_SERVICES, SERVICES, type Service } from './services.js';
import { type CloseOptions, type CloseResult, type Closer, closeInOrder } from './shutdown.js';
import { openEventLog, openStores } from './stores.js';

export {
  CLUSTER_REQUESTS_PER_CONNECTION,
  DASHBOARD_DIR,
  MIGRATIONS,
  PROJECTOR_GROUP,
  type RuntimeOptions,
  type RuntimeSecrets,
  resolvePublicUrl,
  SERVICES,
  type Service,
  type ShutdownHang,
};

/** The roles that read or write the event log (the bounce mailbox too, when it has a port). */
const LOG_USERS: readonly Service[] = [
  'ingest',
  'projector',
  'api',
  'worker',
  'sender',
  'submission',
  'dispatcher',
];

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
  /** The inbound MX listener's port (SPEC §24), when it runs. */
  inboundPort?: number;
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
 * The roles this process runs. With the embedded ClickHouse engine (no CLICKHOUSE_URL), chDB belongs
 * to the one process of the projector and the api, so the worker — which deletes expired ClickHouse
 * rows — runs there too: `--services=projector,api` keeps its background jobs (docs/deploy.md).
 */
export function effectiveServices(config: Config, services: ReadonlySet<Service>): ReadonlySet<Service> {
  if (!config.clickhouseUrl && services.has('projector') && services.has('api') && !services.has('worker'))
    return new Set([...services, 'worker']);
  return services;
}

/**
 * Refuses the combinations an embedded store cannot serve: PGlite and chDB belong to one
 * process, so services split across processes need the servers.
 */
export function checkTopology(config: Config, services: ReadonlySet<Service>): void {
  const all = CORE_SERVICES.every((s) => services.has(s));
  if (!all && !config.databaseUrl) {
    throw new ConfigError(
      `Starting ${[...services].join('+')} alone needs DATABASE_URL: the embedded Postgres (PGlite) belongs to one process; run \`npm start\` for everything in one process`,
      ['DATABASE_URL', '--services'],
    );
  }
  if (services.has('submission') && config.smtpSubmissionPort === undefined && services.size === 1) {
    throw new ConfigError(
      'Starting submission needs SMTP_SUBMISSION_PORT (SMTP submission is off unless it is set)',
      ['SMTP_SUBMISSION_PORT'],
    );
  }
  const chUsers = ['projector', 'api'].filter((s) => services.has(s as Service));
  if (chUsers.length === 1 && !config.clickhouseUrl) {
    throw new ConfigError(
      `Starting ${chUsers[0]} without api+projector in the same process needs CLICKHOUSE_URL: the embedded ClickHouse engine (chDB) belongs to one process`,
      ['CLICKHOUSE_URL', '--services'],
    );
  }
  if (services.has('worker') && chUsers.length < 2 && !config.clickhouseUrl) {
    throw new ConfigError(
      'Starting worker without api+projector in the same process needs CLICKHOUSE_URL: the embedded ClickHouse engine (chDB) belongs to one process',
      ['CLICKHOUSE_URL'],
    );
  }
}

/** The secrets every role of `services` needs, refused at once when one is missing. */
function requireSecrets(services: ReadonlySet<Service>, secrets: RuntimeSecrets): void {
  const sealers = (['api', 'worker', 'dispatcher', 'sender'] as const).filter((s) => services.has(s));
  if (sealers.length > 0) {
    if (!secrets.webhookSecretsKey) {
      const who = sealers[0];
      throw new ConfigError(`WEBHOOK_SECRETS_KEY is required to run the ${who}`, ['WEBHOOK_SECRETS_KEY']);
    }
  }
  // Crypto-shredding (SPEC §14): every service reads and writes the log through the keyring.
  if (!secrets.encryptionKey)
    throw new ConfigError('ENCRYPTION_KEY is required to run Tern', ['ENCRYPTION_KEY']);
}

/**
 * A listener role started without its port refused, unless it runs in the all-in-one process
 * (which starts it only when the port is set).
 */
function requirePort(
  services: ReadonlySet<Service>,
  role: Service,
  port: number | undefined,
  name: string,
  what: string,
): void {
  if (services.has(role) && port === undefined && !CORE_SERVICES.every((s) => services.has(s)))
    throw new ConfigError(`${name} is required to run ${what} (--services=${role})`, [name]);
}

/** Starts the roles of `requested` in this process, once their topology is known to work (checkTopology). */
export async function startRuntime(
  config: Config,
  requested: ReadonlySet<Service>,
  secrets: RuntimeSecrets,
  options: RuntimeOptions = {},
): Promise<Runtime> {
  const services = effectiveServices(config, requested);
  checkTopology(config, services);
  return startServices(config, services, secrets, options);
}

/**
 * Starts exactly `services`, without the topology check: a test runs one role's runtime after
 * another in one process, where the embedded ClickHouse is shared whatever the roles.
 */
export async function startServices(
  config: Config,
  services: ReadonlySet<Service>,
  secrets: RuntimeSecrets,
  options: RuntimeOptions = {},
): Promise<Runtime> {
  const publicUrl = resolvePublicUrl(config, services);
  const logger = processLogger(config.logLevel);
  if (!config.publicUrl && services.has('sender') && !services.has('api')) {
    logger.warn(
      { publicUrl },
      'PUBLIC_URL unset: tracking and unsubscribe links point at the default api address',
    );
  }
  const closers: Closer[] = [];
  const onClose = (name: string, close: () => Promise<unknown>) => void closers.unshift({ name, close });
  // The bounce mailbox runs where it is asked for and has a port (SPEC §21: off unless set).
  const runBounce = services.has('bounce') && config.bounceSmtpPort !== undefined;
  // The inbound MX runs where it is asked for and has a port (SPEC §24: off unless set).
  const runInbound = services.has('inbound') && config.inboundSmtpPort !== undefined;
  let log: EventLog | undefined;
  try {
    const { pg: pgStore, ch: chStore } = await openStores(
      config,
      logger,
      { clickhouse: services.has('projector') || services.has('api') || services.has('worker') },
      onClose,
    );
    const pool = pgStore.pool;
    const readiness: ReadinessCheck[] = [
      { name: 'postgres', check: async () => void (await pool.query('SELECT 1')) },
    ];
    if (chStore) {
      const ch = chStore.client;
      readiness.push({
        name: 'clickhouse',
        check: async () => {
          const result = await ch.ping();
          if (!result.success) throw result.error;
        },
      });
    }
    requireSecrets(services, secrets);
    // Webhook secrets are sealed at rest with this key: the api and the dispatcher need it
    // (loadConfig already refuses a production start without it; dev generates one).
    // The same key seals the DKIM private keys of sending domains (its own derived AES key): the
    // api generates them, the sender signs with them (SPEC §20); the worker re-checks the domains.
    let secretBox: SecretBox | undefined;
    let dkimSealer: KeySealer | undefined;
    if (['api', 'worker', 'dispatcher', 'sender'].some((s) => services.has(s as Service))) {
      secretBox = createSecretBox(secrets.webhookSecretsKey!);
      dkimSealer = createSecretBox(secrets.webhookSecretsKey!, 'dkim keys');
    }
    // Personal fields are sealed on append and opened on consume (docs/architecture.md).
    const keyring = createKeyring({ pool, encryptionKey: secrets.encryptionKey! });
    requirePort(services, 'bounce', config.bounceSmtpPort, 'BOUNCE_SMTP_PORT', 'the bounce mailbox');

    // The API appends sends, cancels and tracking events; the worker bulk sends; the sender
    // outcomes; the dispatcher reads the log; the bounce mailbox appends delivery feedback.
    requirePort(services, 'inbound', config.inboundSmtpPort, 'INBOUND_SMTP_PORT', 'the inbound MX');
    if (runBounce || runInbound || LOG_USERS.some((s) => services.has(s))) {
      const opened = await openEventLog(config, pgStore, logger);
      log = opened;
      onClose('event-log', () => opened.close());
      readiness.push({ name: 'event-log', check: () => opened.ping() });
    }

    // One TRACKING_SECRET signs tracking links and campaign mail's unsubscribe links (sender), and
    // checks both (api).
    if ((services.has('api') || services.has('sender') || runBounce) && !secrets.trackingSecret)
      throw new ConfigError('TRACKING_SECRET is required to run api, sender or bounce', ['TRACKING_SECRET']);

    const metrics = createMetrics();
    const ctx: RuntimeContext = {
      config,
      services,
      secrets,
      options,
      logger,
      metrics,
      publicUrl,
      pgStore,
      pool,
      ch: chStore?.client,
      stream: log ? sealedEventStream(log, keyring) : undefined,
      keyring,
      secretBox,
      dkimSealer,
      trackingSecret: secrets.trackingSecret,
      requireVerifiedDomains: config.nodeEnv === 'production' && config.smtpUrl !== undefined,
      readiness,
      background: [],
      onClose,
      activity: () => {},
      running: {},
    };

    const app = services.has('api') ? await startApi(ctx) : createBareApp(ctx);
    if (services.has('worker')) startWorker(ctx);
    if (services.has('api')) await mountDashboard(app);
    const { running } = ctx;
    const metricsServed = installMetrics(
      app,
      metrics,
      async () => {
        if (running.projector) metrics.projectorLag.set(await running.projector.lag());
        if (running.dispatcher) metrics.dispatcherLag.set(await running.dispatcher.lag());
        if (running.sender) metrics.providerFailing.set(running.sender.providerHealth().failing ? 1 : 0);
      },
      { token: secrets.metricsToken, production: config.nodeEnv === 'production' },
    );
    if (!metricsServed) logger.warn('GET /metrics is off: set METRICS_TOKEN to serve it in production');
    if (services.has('ingest')) await startIngest(ctx, app);
    if (services.has('projector')) startProjector(ctx);
    if (services.has('sender')) await startSender(ctx);
    if (services.has('dispatcher')) await startDispatcher(ctx);
    const bouncePort = runBounce ? await startBounce(ctx) : undefined;
    const inboundPort = runInbound ? await startInbound(ctx) : undefined;
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
      // A callback hook: no promise per request (issue 29).
      app.addHook('onRequest', (_request, _reply, done) => {
        idle.touch();
        done();
      });
      ctx.activity = () => idle.touch();
      idle.start();
      onClose('idle-memory-release', async () => idle.stop());
    }
    const submission =
      services.has('submission') && config.smtpSubmissionPort !== undefined
        ? await startSubmission(ctx, app)
        : undefined;
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
      ...(inboundPort !== undefined ? { inboundPort } : {}),
      stores: {
        postgres: pgStore.kind === 'pglite' ? 'PGlite' : 'Postgres server',
        clickhouse: chStore ? (chStore.kind === 'chdb' ? 'chDB' : 'ClickHouse server') : 'none',
        eventLog: log ? (config.kafkaBrokers ? 'Kafka' : 'Postgres-table') : 'none',
      },
      ...(submission ? { smtpSubmissionPort: submission.port } : {}),
      started: Promise.all(ctx.background).then(() => undefined),
      close: (opts) => closeInOrder(closers.splice(0), opts),
    };
  } catch (error) {
    await closeInOrder(closers.splice(0));
    throw error;
  }
}
