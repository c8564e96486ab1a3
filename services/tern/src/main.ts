import { signDashboardToken } from '@tern/auth';
import { ConfigError, loadConfig } from '@tern/config';
import { boundHeapGrowth } from '@tern/stores';
import { pino } from 'pino';
import { renderBanner } from './banner.js';
import { ingestWorkerCount, isClusterPrimary, superviseIngestWorkers } from './ingest-cluster.js';
import {
  checkTopology,
  effectiveServices,
  type RuntimeSecrets,
  resolvePublicUrl,
  SERVICES,
  type Service,
  type ShutdownHang,
  startRuntime,
} from './runtime.js';
import { loadOrCreateDevSecrets } from './secrets.js';
import { startShutdownWatchdog } from './shutdown.js';

const DEMO_TENANT = 'demo';

/**
 * `--services=ingest,api` (default: all — ingest, projector, api, worker, sender, dispatcher, bounce,
 * and submission when SMTP_SUBMISSION_PORT is set — in one process).
 */
function servicesFromArgs(argv: readonly string[]): Set<Service> {
  const arg = argv.find((a) => a.startsWith('--services='));
  if (!arg) return new Set(SERVICES);
  const names = arg.slice('--services='.length).split(',').filter(Boolean);
  for (const n of names) {
    if (!(SERVICES as readonly string[]).includes(n)) {
      throw new ConfigError(`Invalid --services: ${n} is not one of ${SERVICES.join(', ')}`, ['--services']);
    }
  }
  return new Set(names as Service[]);
}

/**
 * Test hook of the shutdown deadline (issue 24 item 17): `TERN_TEST_SHUTDOWN_HANG=<component>:
 * <promise|block>` makes that component's close never finish (`promise`) or block the main
 * thread on a futex (`block`). Honoured only with NODE_ENV=test, never in development or
 * production, so no deployment can turn it on by accident.
 */
function testShutdownHang(nodeEnv: string): ShutdownHang | undefined {
  const raw = process.env.TERN_TEST_SHUTDOWN_HANG;
  if (nodeEnv !== 'test' || !raw) return undefined;
  const [component = '', mode = ''] = raw.split(':');
  if (mode !== 'promise' && mode !== 'block') return undefined;
  return { component, mode };
}

async function main(): Promise<void> {
  const started = performance.now();
  const config = loadConfig(process.env);
  // Before any load: the heap stays near its live set (docs/architecture.md "The heap under load").
  boundHeapGrowth(config.heapGrowthPercent);
  const services = servicesFromArgs(process.argv.slice(2));
  const secrets: RuntimeSecrets = {
    jwtSecret: config.jwtSecret,
    ingestToken: config.ingestToken,
    trackingSecret: config.trackingSecret,
    webhookSecretsKey: config.webhookSecretsKey,
    encryptionKey: config.encryptionKey,
    metricsToken: config.metricsToken,
  };
  let generated = false;
  const noJwtKey = !config.jwtSecret && !config.jwtPublicKey && !config.jwtJwksUrl;
  const devSecretMissing =
    noJwtKey ||
    !config.ingestToken ||
    !config.trackingSecret ||
    !config.webhookSecretsKey ||
    !config.encryptionKey;
  if (devSecretMissing && config.nodeEnv !== 'production') {
    const dev = loadOrCreateDevSecrets(config.dataDir);
    if (noJwtKey) secrets.jwtSecret = dev.jwtSecret;
    if (!config.ingestToken) secrets.ingestToken = dev.ingestToken;
    if (!config.trackingSecret) secrets.trackingSecret = dev.trackingSecret;
    if (!config.webhookSecretsKey) secrets.webhookSecretsKey = dev.webhookSecretsKey;
    if (!config.encryptionKey) secrets.encryptionKey = dev.encryptionKey;
    generated = noJwtKey || !config.ingestToken;
  }
  const workers = ingestWorkerCount(services, config.ingestWorkers);
  if (isClusterPrimary(workers)) {
    // A topology no worker can serve is refused once, here, not once per worker.
    checkTopology(config, effectiveServices(config, services));
    resolvePublicUrl(config, effectiveServices(config, services));
    // The dev secrets file (if any) was written above, before the workers read it.
    superviseIngestWorkers(workers, pino({ level: config.logLevel }));
    return;
  }
  const runtime = await startRuntime(config, services, secrets, {
    ...(testShutdownHang(config.nodeEnv) ? { shutdownHang: testShutdownHang(config.nodeEnv) } : {}),
  });
  const startMs = Math.round(performance.now() - started);
  runtime.app.log.info(
    {
      services: [...services],
      url: runtime.url,
      startMs,
      stores: runtime.stores,
      ...(runtime.smtpSubmissionPort !== undefined ? { smtpSubmissionPort: runtime.smtpSubmissionPort } : {}),
    },
    'tern started',
  );
  if (
    generated &&
    secrets.jwtSecret &&
    secrets.ingestToken &&
    services.has('api') &&
    services.has('ingest')
  ) {
    const dashboardJwt = signDashboardToken({
      secret: secrets.jwtSecret,
      tenantId: DEMO_TENANT,
      role: 'owner',
      sub: 'demo-user',
      expiresInSeconds: 30 * 24 * 3600,
    });
    process.stdout.write(
      renderBanner({
        url: runtime.url,
        publicUrl: config.publicUrl ?? runtime.url,
        tenantId: DEMO_TENANT,
        dashboardJwt,
        ingestToken: secrets.ingestToken,
        stores: runtime.stores,
      }),
    );
  }

  runtime.started.then(
    () => undefined,
    (error: unknown) => {
      // The projector could not join its group (Kafka gone for good): exit, the supervisor restarts.
      runtime.app.log.error({ err: error }, 'a background start failed; exiting');
      // Bounded like a signal's shutdown (SHUTDOWN_TIMEOUT_MS).
      setTimeout(() => process.exit(1), config.shutdownTimeoutMs * 0.8).unref();
      void runtime
        .close({ deadlineAt: Date.now() + Math.floor(config.shutdownTimeoutMs * 0.7) })
        .finally(() => process.exit(1));
    },
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const timeoutMs = config.shutdownTimeoutMs;
    const startedAt = Date.now();
    runtime.app.log.info({ signal, timeoutMs }, 'shutting down');
    // SHUTDOWN_TIMEOUT_MS (issue 24 item 17): components are given up on at 70 % of it, the main
    // thread exits at 80 %, and a watchdog thread kills the process at 90 % if the main thread is
    // blocked (a native call asleep on a futex runs no timer of ours). The rest is slack for a
    // loaded machine: the signal's delivery, the exit itself.
    const watchdog = startShutdownWatchdog({
      fireAt: startedAt + Math.floor(timeoutMs * 0.9),
      timeoutMs,
      pending: [],
    });
    let pending: readonly string[] = [];
    const exitFailed = (unfinished: readonly string[], why: string) => {
      runtime.app.log.error(
        { unfinished, timeoutMs, elapsedMs: Date.now() - startedAt },
        `shutdown: did not finish within ${timeoutMs} ms (${why}): ${unfinished.join(', ') || 'none'}; exiting`,
      );
      process.exit(1);
    };
    const force = setTimeout(() => exitFailed(pending, 'SHUTDOWN_TIMEOUT_MS'), Math.floor(timeoutMs * 0.8));
    force.unref();
    runtime
      .close({
        deadlineAt: startedAt + Math.floor(timeoutMs * 0.7),
        onPending: (names) => {
          pending = names;
          watchdog.pending(names);
        },
        onAbandoned: (name, waitedMs) =>
          runtime.app.log.error(
            { component: name, waitedMs },
            `shutdown: ${name} did not finish; left behind`,
          ),
      })
      .then(
        ({ unfinished }) => {
          if (unfinished.length > 0) exitFailed(unfinished, 'left behind');
          else process.exit(0);
        },
        (error: unknown) => {
          runtime.app.log.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  // Bad configuration is one clear line; anything else gets its stack.
  if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
  else
    process.stderr.write(
      `tern: failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  process.exit(1);
});
