import {
  type Config,
  ConfigError,
  DEFAULT_PRODUCTION_SEND_RATE,
  type LoadConfigOptions,
  MIN_SECRET_BYTES,
} from './config.js';
import { envSchema } from './schema.js';

// The configuration (SPEC §2): `config.ts` holds the `Config` the services receive, `vars.ts` the
// parsers of single variables, `schema.ts` the environment schema (one key per variable), and this
// module `loadConfig`, which parses the environment once at start.
export {
  type Config,
  ConfigError,
  DEFAULT_PRODUCTION_SEND_RATE,
  DEFAULT_RETENTION_DAYS,
  LOG_LEVELS,
  type LoadConfigOptions,
  type LogLevel,
  MIN_SECRET_BYTES,
  NODE_ENVS,
  type NodeEnv,
  type SmtpListenerLimitsConfig,
  type TrustProxy,
} from './config.js';
export { ENV_VARS, type EnvVar } from './schema.js';

type Env = Record<string, string | undefined>;

// Values never echoed back in an error message.
const SECRET_VARS = new Set([
  'JWT_SECRET',
  'JWT_PUBLIC_KEY',
  'INGEST_TOKEN',
  'TRACKING_SECRET',
  'WEBHOOK_SECRETS_KEY',
  'ENCRYPTION_KEY',
  'POSTMARK_WEBHOOK_PASSWORD',
  'MAILGUN_WEBHOOK_SIGNING_KEY',
  'RESEND_WEBHOOK_SECRET',
  'METRICS_TOKEN',
]);

function shownValue(variable: string, raw: string | undefined): string {
  if (raw === undefined) return '';
  if (SECRET_VARS.has(variable)) return ' (value hidden)';
  // A URL may carry a password: keep the user, hide the rest of the credentials.
  const masked = raw.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
  const oneLine = JSON.stringify(masked.length > 80 ? `${masked.slice(0, 77)}...` : masked);
  return ` (got ${oneLine})`;
}

/**
 * Parses the environment. Empty strings count as unset (a `VAR=` line in a compose file means
 * "no value"). Throws a `ConfigError` on the first start-up mistake it can see: every invalid
 * variable, reported on one line.
 */
export function loadConfig(env: Env, opts: LoadConfigOptions = {}): Config {
  const cleaned: Env = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = env[key]?.trim();
    if (value !== undefined && value !== '') cleaned[key] = value;
  }

  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const seen = new Set<string>();
    const parts: string[] = [];
    for (const issue of parsed.error.issues) {
      const variable = String(issue.path[0] ?? 'environment');
      if (seen.has(variable)) continue;
      seen.add(variable);
      parts.push(`${variable} ${issue.message}${shownValue(variable, cleaned[variable])}`);
    }
    throw new ConfigError(`Invalid configuration: ${parts.join('; ')}`, [...seen]);
  }

  const e = parsed.data;
  const config: Config = {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    clickhouseUrl: e.CLICKHOUSE_URL,
    kafkaBrokers: e.KAFKA_BROKERS,
    kafkaTopic: e.KAFKA_TOPIC,
    kafkaPartitions: e.KAFKA_PARTITIONS,
    kafkaSessionTimeoutMs: e.KAFKA_SESSION_TIMEOUT_MS,
    jwtSecret: e.JWT_SECRET,
    jwtPublicKey: e.JWT_PUBLIC_KEY,
    jwtJwksUrl: e.JWT_JWKS_URL,
    ingestToken: e.INGEST_TOKEN,
    trackingSecret: e.TRACKING_SECRET,
    retentionDays: e.RETENTION_DAYS,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    // SPEC §23: unlimited in development, DEFAULT_PRODUCTION_SEND_RATE with NODE_ENV=production.
    sendRatePerSecond:
      e.SEND_RATE_PER_SECOND ?? (e.NODE_ENV === 'production' ? DEFAULT_PRODUCTION_SEND_RATE : 0),
    // Issue 40 item 9: tenants may only lower the server's rate unless the operator names a ceiling.
    sendRateMaxPerSecond:
      e.SEND_RATE_MAX_PER_SECOND ??
      e.SEND_RATE_PER_SECOND ??
      (e.NODE_ENV === 'production' ? DEFAULT_PRODUCTION_SEND_RATE : 0),
    // SPEC §2: private targets are allowed in development, refused with NODE_ENV=production.
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE ?? e.NODE_ENV !== 'production',
    webhookSecretsKey: e.WEBHOOK_SECRETS_KEY,
    encryptionKey: e.ENCRYPTION_KEY,
    smtpUrl: e.SMTP_URL,
    smtpMaxConnections: e.SMTP_MAX_CONNECTIONS,
    smtpStartConnections: e.SMTP_START_CONNECTIONS,
    smtpMaxMessages: e.SMTP_MAX_MESSAGES,
    publicUrl: e.PUBLIC_URL,
    nodeEnv: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    jwtMaxLifetimeDays: e.JWT_MAX_LIFETIME_DAYS,
    projectorStallSeconds: e.PROJECTOR_STALL_SECONDS,
    dedupWindowDays: e.DEDUP_WINDOW_DAYS,
    eventStreamDays: e.EVENT_STREAM_DAYS,
    eventPageCacheMb: e.EVENT_PAGE_CACHE_MB,
    heapGrowthPercent: e.HEAP_GROWTH_PERCENT,
    ingestWorkers: e.INGEST_WORKERS,
    dnsServers: e.DNS_SERVERS,
    bounceSubdomain: e.BOUNCE_SUBDOMAIN,
    domainsMaxPerTenant: e.DOMAINS_MAX_PER_TENANT,
    sendContentMaxMb: e.SEND_CONTENT_MAX_MB,
    sendContentMaxMbPerTenant: e.SEND_CONTENT_MAX_MB_PER_TENANT,
    bounceMxHost: e.BOUNCE_MX_HOST,
    spfInclude: e.SPF_INCLUDE,
    smtpSubmissionPort: e.SMTP_SUBMISSION_PORT,
    smtpTlsCert: e.SMTP_TLS_CERT,
    smtpTlsKey: e.SMTP_TLS_KEY,
    bounceSmtpPort: e.BOUNCE_SMTP_PORT,
    bounceDomain: e.BOUNCE_DOMAIN,
    bounceSmtpMaxBytes: e.BOUNCE_SMTP_MAX_BYTES,
    bounceSmtpRatePerMinute: e.BOUNCE_SMTP_RATE_PER_MINUTE,
    inboundSmtpPort: e.INBOUND_SMTP_PORT,
    inboundDomain: e.INBOUND_DOMAIN,
    inboundMxHost: e.INBOUND_MX_HOST,
    inboundMaxBytes: e.INBOUND_MAX_BYTES,
    smtpListenerLimits: {
      maxConnections: e.SMTP_LISTEN_MAX_CONNECTIONS,
      maxConnectionsPerClient: e.SMTP_LISTEN_MAX_CONNECTIONS_PER_CLIENT,
      idleTimeoutMs: e.SMTP_LISTEN_IDLE_SECONDS * 1000,
      authDeadlineMs: e.SMTP_LISTEN_AUTH_SECONDS * 1000,
      sessionDeadlineMs: e.SMTP_LISTEN_SESSION_SECONDS * 1000,
      maxAuthFailures: e.SMTP_LISTEN_MAX_AUTH_FAILURES,
      maxRecipientsPerMessage: e.SMTP_LISTEN_MAX_RECIPIENTS,
      maxRecipientsPerConnection: e.SMTP_LISTEN_MAX_RECIPIENTS_PER_CONNECTION,
      messagesPerMinute: e.SMTP_LISTEN_MESSAGES_PER_MINUTE,
      recipientsPerMinute: e.SMTP_LISTEN_RECIPIENTS_PER_MINUTE,
    },
    sesTopicArns: e.SES_TOPIC_ARNS,
    sendgridWebhookPublicKey: e.SENDGRID_WEBHOOK_PUBLIC_KEY,
    postmarkWebhook:
      e.POSTMARK_WEBHOOK_USER !== undefined && e.POSTMARK_WEBHOOK_PASSWORD !== undefined
        ? { user: e.POSTMARK_WEBHOOK_USER, password: e.POSTMARK_WEBHOOK_PASSWORD }
        : undefined,
    mailgunWebhookSigningKey: e.MAILGUN_WEBHOOK_SIGNING_KEY,
    resendWebhookSecret: e.RESEND_WEBHOOK_SECRET,
    trustProxy: e.TRUST_PROXY ?? false,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    metricsToken: e.METRICS_TOKEN,
    openDedupSeconds: e.OPEN_DEDUP_SECONDS,
  };

  // STARTTLS of SMTP submission (SPEC §22): a pair or nothing; in production a real pair.
  if ((config.smtpTlsCert === undefined) !== (config.smtpTlsKey === undefined)) {
    throw new ConfigError('Invalid configuration: set both SMTP_TLS_CERT and SMTP_TLS_KEY, or neither', [
      config.smtpTlsCert === undefined ? 'SMTP_TLS_CERT' : 'SMTP_TLS_KEY',
    ]);
  }
  if (
    config.nodeEnv === 'production' &&
    config.smtpSubmissionPort !== undefined &&
    config.smtpTlsCert === undefined
  ) {
    throw new ConfigError(
      'Invalid configuration: SMTP_SUBMISSION_PORT needs SMTP_TLS_CERT and SMTP_TLS_KEY in production (no submission without TLS; the self-signed pair is for development only)',
      ['SMTP_TLS_CERT', 'SMTP_TLS_KEY'],
    );
  }
  // Postmark's basic auth is a pair: one half alone would leave the route open or unusable.
  if ((e.POSTMARK_WEBHOOK_USER === undefined) !== (e.POSTMARK_WEBHOOK_PASSWORD === undefined)) {
    throw new ConfigError(
      'Invalid configuration: set both POSTMARK_WEBHOOK_USER and POSTMARK_WEBHOOK_PASSWORD, or neither',
      ['POSTMARK_WEBHOOK_USER', 'POSTMARK_WEBHOOK_PASSWORD'],
    );
  }

  // One way to verify dashboard JWTs: two would make "which key signed this" ambiguous.
  const keySources = (['JWT_SECRET', 'JWT_PUBLIC_KEY', 'JWT_JWKS_URL'] as const).filter((v) => cleaned[v]);
  if (keySources.length > 1) {
    throw new ConfigError(
      `Invalid configuration: set only one of ${keySources.join(', ')} (each is a way to verify dashboard JWTs)`,
      keySources,
    );
  }

  if (opts.requireSecrets ?? config.nodeEnv === 'production') {
    const missing: string[] = [];
    if (!config.jwtSecret && !config.jwtPublicKey && !config.jwtJwksUrl) missing.push('JWT_SECRET');
    if (!config.ingestToken) missing.push('INGEST_TOKEN');
    if (!config.trackingSecret) missing.push('TRACKING_SECRET');
    if (!config.webhookSecretsKey) missing.push('WEBHOOK_SECRETS_KEY');
    if (!config.encryptionKey) missing.push('ENCRYPTION_KEY');
    if (missing.length > 0) {
      const what = missing
        .map((v) =>
          v === 'JWT_SECRET'
            ? 'JWT_SECRET (or JWT_PUBLIC_KEY / JWT_JWKS_URL) must be set'
            : `${v} must be set`,
        )
        .join('; ');
      throw new ConfigError(
        `Invalid configuration: ${what} in production (dev values are generated only outside production)`,
        missing,
      );
    }
    const short = (['JWT_SECRET', 'INGEST_TOKEN'] as const).filter(
      (v) => cleaned[v] !== undefined && Buffer.byteLength(cleaned[v]!, 'utf8') < MIN_SECRET_BYTES,
    );
    if (short.length > 0) {
      throw new ConfigError(
        `Invalid configuration: ${short.join(' and ')} must be at least ${MIN_SECRET_BYTES} bytes in production (value hidden); e.g. \`openssl rand -base64 32\``,
        short,
      );
    }
  }

  return config;
}

export { CONFIG_DOCS, type VariableDoc } from './docs.js';
export {
  CONFIG_TABLE_END,
  CONFIG_TABLE_START,
  renderConfigTables,
  TOOL_VARIABLES,
  withConfigTables,
} from './docs-tables.js';
