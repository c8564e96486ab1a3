import { signDashboardToken } from '@tern/auth';
import { ConfigError, loadConfig } from '@tern/config';
import { pino } from 'pino';
import { renderBanner } from './banner.js';
import { ingestWorkerCount, isClusterPrimary, superviseIngestWorkers } from './ingest-cluster.js';
import {
  checkTopology,
  type RuntimeSecrets,
  resolvePublicUrl,
  SERVICES,
  type Service,
  startRuntime,
} from './runtime.js';
import { loadOrCreateDevSecrets } from './secrets.js';

const DEMO_TENANT = 'demo';

/** `--services=ingest,api` (default: all five — ingest, projector, api, sender, dispatcher — in one process). */
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

async function main(): Promise<void> {
  const started = performance.now();
  const config = loadConfig(process.env);
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
    checkTopology(config, services);
    resolvePublicUrl(config, services);
    // The dev secrets file (if any) was written above, before the workers read it.
    superviseIngestWorkers(workers, pino({ level: config.logLevel }));
    return;
  }
  const runtime = await startRuntime(config, services, secrets);
  const startMs = Math.round(performance.now() - started);
  runtime.app.log.info(
    { services: [...services], url: runtime.url, startMs, stores: runtime.stores },
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
      void runtime.close().finally(() => process.exit(1));
    },
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    runtime.app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      runtime.app.log.error('shutdown took longer than 30 s; exiting');
      process.exit(1);
    }, 30_000);
    force.unref();
    runtime.close().then(
      () => process.exit(0),
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
  else if (error instanceof Error && /needs (DATABASE_URL|CLICKHOUSE_URL)|is required/.test(error.message)) {
    process.stderr.write(`tern: ${error.message}\n`);
  } else
    process.stderr.write(
      `tern: failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  process.exit(1);
});
