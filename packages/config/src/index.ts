import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * The environment variables Tern reads (SPEC §2), parsed once at start. Everything below the
 * entry points receives a `Config` (or the part of it it needs), never `process.env`.
 */
export interface Config {
  /** HTTP port of the all-in-one process. */
  port: number;
  /** Interface the HTTP servers bind to. */
  host: string;
  /** Where the embedded stores (PGlite, chDB, …) keep their data. */
  dataDir: string;
  /** Postgres server; undefined → embedded PGlite. */
  databaseUrl: string | undefined;
  /** ClickHouse HTTP URL; undefined → embedded chDB. */
  clickhouseUrl: string | undefined;
  /** Kafka bootstrap brokers (`host:port`); undefined → the Postgres-table event log. */
  kafkaBrokers: string[] | undefined;
  kafkaTopic: string;
  /** Partitions of the topic when Tern creates it. */
  kafkaPartitions: number;
  /** HS256 secret of dashboard JWTs. */
  jwtSecret: string | undefined;
  /** PEM public key of dashboard JWTs (RS256/ES256). */
  jwtPublicKey: string | undefined;
  /** JWKS endpoint of dashboard JWTs. */
  jwtJwksUrl: string | undefined;
  /** Bearer token of the sending pipeline on `POST /events`. */
  ingestToken: string | undefined;
  /** HMAC key of tracking and unsubscribe tokens (SPEC §2); dev: generated and kept. */
  trackingSecret: string | undefined;
  /** Default log retention; a tenant may override it. */
  retentionDays: number;
  /** Query API requests per credential per minute; 0 turns the limit off. */
  rateLimitPerMinute: number;
  /** SPEC §23: a tenant's default send rate (emails/s handed to the provider); 0 = unlimited. */
  sendRatePerSecond: number;
  /** Webhook URLs may be http:// and reach loopback/private/link-local addresses (SPEC §17). */
  webhookAllowPrivate: boolean;
  /**
   * Server key that seals webhook signing secrets at rest (AES-256-GCM, key derived with HKDF).
   * Unset: generated in development (kept in the dev secrets file); required in production.
   */
  webhookSecretsKey: string | undefined;
  /**
   * Server key of crypto-shredding (SPEC §14): HKDF derives the key that wraps the per-recipient
   * data keys and the key of recipient hashes. ≥ 32 bytes. Unset: generated in development (kept
   * in the dev secrets file); required in production. Losing it makes every sealed field unreadable.
   */
  encryptionKey: string | undefined;
  /** Mail relay of the sender (`smtp://` / `smtps://`); undefined → the sandbox provider (SPEC §11). */
  smtpUrl: string | undefined;
  /** Connections the sender keeps open to the relay of `smtpUrl` at most; 0 = a new connection per message. */
  smtpMaxConnections: number;
  /** Messages sent over one pooled connection before it is replaced. */
  smtpMaxMessages: number;
  /** Base URL users reach Tern at (dashboard link, tracking links); undefined → the listen URL. */
  publicUrl: string | undefined;
  nodeEnv: NodeEnv;
  logLevel: LogLevel;
  /** Largest accepted remaining lifetime of a dashboard JWT (`exp - now`), in days. */
  jwtMaxLifetimeDays: number;
  /** `/ready` turns 503 when the projector made no progress this long while lag > 0. */
  projectorStallSeconds: number;
  /**
   * How long an applied event id is remembered (a duplicate within it changes nothing), and how
   * long a consumed record stays in the Postgres-table event log (docs/reliability.md).
   */
  dedupWindowDays: number;
  /**
   * Processes serving `--services=ingest` (node:cluster, one port): undefined → one per core.
   * Only an ingest-only process forks; every other topology stays one process.
   */
  ingestWorkers: number | undefined;
  /** DNS_SERVERS: resolvers of sending-domain checks (`ip:port`, SPEC §20); undefined → the system's. */
  dnsServers: string[] | undefined;
  /** BOUNCE_SUBDOMAIN: label(s) under a sending domain that carry the envelope sender. */
  bounceSubdomain: string;
  /** BOUNCE_MX_HOST: the MX of every bounce subdomain; undefined → the host of PUBLIC_URL. */
  bounceMxHost: string | undefined;
  /** SPF_INCLUDE: the domain the bounce subdomain's SPF includes; undefined → the relay's own address. */
  spfInclude: string | undefined;
  /** SMTP submission port (SPEC §22); undefined → no SMTP submission. */
  smtpSubmissionPort: number | undefined;
  /** PEM files of STARTTLS of SMTP submission; unset → a generated self-signed pair (development only). */
  smtpTlsCert: string | undefined;
  smtpTlsKey: string | undefined;
  /** BOUNCE_SMTP_PORT: the bounce mailbox's SMTP port (SPEC §21); undefined → no listener (0: any free port). */
  bounceSmtpPort: number | undefined;
  /** BOUNCE_DOMAIN: bounce host of mail no verified domain signs, accepted by the bounce mailbox. */
  bounceDomain: string | undefined;
  /** BOUNCE_SMTP_MAX_BYTES: largest message the bounce mailbox takes (552 past it). */
  bounceSmtpMaxBytes: number;
  /** BOUNCE_SMTP_RATE_PER_MINUTE: messages one client address may deliver per minute (421 past it). */
  bounceSmtpRatePerMinute: number;
  /** SES_TOPIC_ARNS: SNS topics `POST /providers/ses` accepts (SPEC §21); undefined → no route. */
  sesTopicArns: string[] | undefined;
  /** SENDGRID_WEBHOOK_PUBLIC_KEY: ECDSA key of SendGrid's signed Event Webhook; undefined → no route. */
  sendgridWebhookPublicKey: string | undefined;
  /** POSTMARK_WEBHOOK_USER / _PASSWORD: basic auth of Postmark's webhooks; undefined → no route. */
  postmarkWebhook: { user: string; password: string } | undefined;
  /** MAILGUN_WEBHOOK_SIGNING_KEY: HMAC key of Mailgun's webhooks; undefined → no route. */
  mailgunWebhookSigningKey: string | undefined;
  /** RESEND_WEBHOOK_SECRET: Standard Webhooks secret of Resend's webhooks; undefined → no route. */
  resendWebhookSecret: string | undefined;
  /**
   * TRUST_PROXY, Fastify's `trustProxy`: which proxies' `X-Forwarded-For` gives the client address
   * (rate limits count per client address). false: none (the socket's peer is the client); true:
   * every hop; a number: that many hops; a list: the proxies' addresses or CIDR ranges.
   */
  trustProxy: TrustProxy;
  /** After SIGTERM/SIGINT the process exits within this many milliseconds, whatever hangs. */
  shutdownTimeoutMs: number;
  /** METRICS_TOKEN: bearer token of `GET /metrics`; undefined in production → `/metrics` not served. */
  metricsToken: string | undefined;
  /** OPEN_DEDUP_SECONDS: one open counted per email and reader within this window; 0 → every open. */
  openDedupSeconds: number;
}

/** Fastify's `trustProxy` as TRUST_PROXY sets it. */
export type TrustProxy = boolean | number | string[];

/** Fewest bytes of `JWT_SECRET` and `INGEST_TOKEN` in production (HS256 wants ≥ 256 bits). */
export const MIN_SECRET_BYTES = 32;

/** SPEC §23: a tenant's send rate in production when neither its settings nor SEND_RATE_PER_SECOND name one. */
export const DEFAULT_PRODUCTION_SEND_RATE = 100;

export const NODE_ENVS = ['development', 'production', 'test'] as const;
export type NodeEnv = (typeof NODE_ENVS)[number];
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LoadConfigOptions {
  /**
   * Refuse to start without a JWT verification key and an ingest token. Defaults to
   * `NODE_ENV === 'production'`: elsewhere the entry point may generate and print dev values
   * (SPEC §2), which must never happen silently in production.
   */
  requireSecrets?: boolean;
}

/** Bad configuration. `message` is one line naming the variable(s); meant to be printed as is. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    message: string,
    /** The variables at fault, in the order reported. */
    readonly variables: readonly string[],
  ) {
    super(message);
  }
}

type Env = Record<string, string | undefined>;

const intVar = (min: number, max: number) => {
  const message = `must be an integer ${min}..${max}`;
  return z
    .string()
    .regex(/^[+-]?\d+$/, { error: message })
    .transform(Number)
    .pipe(z.number().int().min(min, { error: message }).max(max, { error: message }));
};

const urlVar = (protocols: readonly string[]) => {
  const message = `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`;
  return z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    { error: message },
  );
};

const boolVar = z
  .string()
  .regex(/^(true|false|1|0)$/i, { error: 'must be true or false' })
  .transform((v) => v.toLowerCase() === 'true' || v === '1');

const enumVar = <T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.join(', ')}` });

// `host:port`, host being a name, an IPv4 address or a bracketed IPv6 address.
const BROKER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/;

// A DNS host name: labels of letters, digits and inner hyphens, at least two.
const HOST_LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;
const hostVar = (min: number) =>
  z
    .string()
    .transform((v) => v.toLowerCase().replace(/\.$/, ''))
    .refine(
      (v) => v.length <= 253 && v.split('.').length >= min && v.split('.').every((l) => HOST_LABEL.test(l)),
      {
        error:
          min > 1 ? 'must be a host name such as mx.example.com' : 'must be a DNS label such as tern-bounces',
      },
    );

// Resolver addresses as node:dns takes them: an IP, with a port (`[v6]:port` for IPv6).
const dnsServer = (entry: string): boolean => {
  const v6 = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  if (v6) return isIP(v6[1]!) === 6 && (v6[2] === undefined || Number(v6[2]) <= 65535);
  if (isIP(entry) === 6) return true;
  const [host = '', port, ...rest] = entry.split(':');
  return (
    rest.length === 0 &&
    isIP(host) === 4 &&
    (port === undefined || (/^\d{1,5}$/.test(port) && Number(port) <= 65535))
  );
};

const dnsServersVar = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  )
  .refine((list) => list.length > 0 && list.every(dnsServer), {
    error: 'must be a comma list of ip:port (e.g. 127.0.0.1:5353; [::1]:53 for IPv6)',
  });

const SNS_TOPIC_ARN = /^arn:aws(?:-[a-z]+)*:sns:[a-z0-9-]{1,32}:\d{12}:[A-Za-z0-9_.-]{1,256}$/;
// Fastify's trustProxy (proxy-addr): an address, a CIDR range or one of proxy-addr's names.
const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const proxyEntry = (entry: string): boolean => {
  if (PROXY_NAMES.has(entry)) return true;
  const [address = '', bits, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
};
const trustProxyVar = z
  .string()
  .transform((value): TrustProxy => {
    const v = value.trim();
    if (/^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
    if (/^\d{1,2}$/.test(v)) return Number(v);
    return v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
  })
  .refine((v) => !Array.isArray(v) || (v.length > 0 && v.every(proxyEntry)), {
    error:
      'must be true, false, a number of hops (0..99) or a comma list of proxy addresses or CIDR ranges (e.g. 10.0.0.0/8,loopback)',
  });

const brokersVar = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((b) => b.trim())
      .filter((b) => b.length > 0),
  )
  .refine((list) => list.length > 0 && list.every((b) => BROKER.test(b)), {
    error: 'must be a comma list of host:port',
  });

// Keys are the variable names, so a zod issue path names the variable directly.
// Every key has a row in `CONFIG_DOCS` (docs.ts), which the README's configuration table is made from.
const envSchema = z.object({
  PORT: intVar(1, 65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  DATA_DIR: z.string().default('./data'),
  DATABASE_URL: urlVar(['postgres:', 'postgresql:']).optional(),
  CLICKHOUSE_URL: urlVar(['http:', 'https:']).optional(),
  KAFKA_BROKERS: brokersVar.optional(),
  KAFKA_TOPIC: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,249}$/, { error: 'must be 1..249 characters of [A-Za-z0-9._-]' })
    .default('tern.email-events'),
  KAFKA_PARTITIONS: intVar(1, 10_000).default(6),
  JWT_SECRET: z.string().optional(),
  // PEM keys are often passed on one line with literal `\n`; restore the line breaks.
  JWT_PUBLIC_KEY: z
    .string()
    .transform((v) => (v.includes('\n') ? v : v.replaceAll('\\n', '\n')))
    .refine((v) => v.includes('-----BEGIN '), { error: 'must be a PEM public key' })
    .optional(),
  JWT_JWKS_URL: urlVar(['http:', 'https:']).optional(),
  INGEST_TOKEN: z.string().optional(),
  TRACKING_SECRET: z.string().min(16, { error: 'must be at least 16 characters' }).optional(),
  RETENTION_DAYS: intVar(1, 3650).default(90),
  RATE_LIMIT_PER_MINUTE: intVar(0, 1_000_000).default(1200),
  SEND_RATE_PER_SECOND: intVar(0, 1_000_000).optional(),
  WEBHOOK_ALLOW_PRIVATE: boolVar.optional(),
  WEBHOOK_SECRETS_KEY: z.string().min(16, { error: 'must be at least 16 characters' }).optional(),
  ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.byteLength(v, 'utf8') >= MIN_SECRET_BYTES, {
      error: `must be at least ${MIN_SECRET_BYTES} bytes`,
    })
    .optional(),
  SMTP_URL: urlVar(['smtp:', 'smtps:']).optional(),
  SMTP_MAX_CONNECTIONS: intVar(0, 1000).default(5),
  SMTP_MAX_MESSAGES: intVar(1, 1_000_000).default(100),
  // A trailing slash is dropped so `${publicUrl}/path` is always one slash.
  PUBLIC_URL: urlVar(['http:', 'https:'])
    .transform((v) => v.replace(/\/+$/, ''))
    .optional(),
  NODE_ENV: enumVar(NODE_ENVS).default('development'),
  LOG_LEVEL: enumVar(LOG_LEVELS).default('info'),
  JWT_MAX_LIFETIME_DAYS: intVar(1, 3650).default(30),
  PROJECTOR_STALL_SECONDS: intVar(5, 86_400).default(60),
  DEDUP_WINDOW_DAYS: intVar(1, 3650).default(7),
  INGEST_WORKERS: intVar(1, 256).optional(),
  DNS_SERVERS: dnsServersVar.optional(),
  BOUNCE_SUBDOMAIN: hostVar(1).default('tern-bounces'),
  BOUNCE_MX_HOST: hostVar(2).optional(),
  SPF_INCLUDE: hostVar(2).optional(),
  SMTP_SUBMISSION_PORT: intVar(1, 65535).optional(),
  SMTP_TLS_CERT: z.string().optional(),
  SMTP_TLS_KEY: z.string().optional(),
  BOUNCE_SMTP_PORT: intVar(0, 65535).optional(),
  BOUNCE_DOMAIN: hostVar(2).optional(),
  BOUNCE_SMTP_MAX_BYTES: intVar(1024, 50 * 1024 * 1024).default(10 * 1024 * 1024),
  BOUNCE_SMTP_RATE_PER_MINUTE: intVar(1, 1_000_000).default(300),
  SES_TOPIC_ARNS: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((a) => a.trim())
        .filter((a) => a !== ''),
    )
    .refine((list) => list.length > 0 && list.every((a) => SNS_TOPIC_ARN.test(a)), {
      error: 'must be a comma list of SNS topic ARNs (arn:aws:sns:<region>:<account>:<topic>)',
    })
    .optional(),
  SENDGRID_WEBHOOK_PUBLIC_KEY: z
    .string()
    .refine((v) => v.includes('-----BEGIN PUBLIC KEY-----') || /^[A-Za-z0-9+/=\s]{40,}$/.test(v), {
      error: 'must be the verification key SendGrid shows (base64) or a PEM public key',
    })
    .optional(),
  POSTMARK_WEBHOOK_USER: z.string().max(200).optional(),
  POSTMARK_WEBHOOK_PASSWORD: z.string().min(16, { error: 'must be at least 16 characters' }).optional(),
  MAILGUN_WEBHOOK_SIGNING_KEY: z.string().min(16, { error: 'must be at least 16 characters' }).optional(),
  RESEND_WEBHOOK_SECRET: z
    .string()
    .regex(/^(whsec_)?[A-Za-z0-9+/=]{16,}$/, {
      error: 'must be a Standard Webhooks secret (whsec_ + base64)',
    })
    .optional(),
  TRUST_PROXY: trustProxyVar.optional(),
  SHUTDOWN_TIMEOUT_MS: intVar(1000, 600_000).default(25_000),
  METRICS_TOKEN: z.string().min(16, { error: 'must be at least 16 characters' }).optional(),
  OPEN_DEDUP_SECONDS: intVar(0, 86_400).default(3600),
});

/** Every environment variable `loadConfig` reads. */
export type EnvVar = keyof typeof envSchema.shape;
export const ENV_VARS = Object.keys(envSchema.shape) as EnvVar[];

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
    // SPEC §2: private targets are allowed in development, refused with NODE_ENV=production.
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE ?? e.NODE_ENV !== 'production',
    webhookSecretsKey: e.WEBHOOK_SECRETS_KEY,
    encryptionKey: e.ENCRYPTION_KEY,
    smtpUrl: e.SMTP_URL,
    smtpMaxConnections: e.SMTP_MAX_CONNECTIONS,
    smtpMaxMessages: e.SMTP_MAX_MESSAGES,
    publicUrl: e.PUBLIC_URL,
    nodeEnv: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    jwtMaxLifetimeDays: e.JWT_MAX_LIFETIME_DAYS,
    projectorStallSeconds: e.PROJECTOR_STALL_SECONDS,
    dedupWindowDays: e.DEDUP_WINDOW_DAYS,
    ingestWorkers: e.INGEST_WORKERS,
    dnsServers: e.DNS_SERVERS,
    bounceSubdomain: e.BOUNCE_SUBDOMAIN,
    bounceMxHost: e.BOUNCE_MX_HOST,
    spfInclude: e.SPF_INCLUDE,
    smtpSubmissionPort: e.SMTP_SUBMISSION_PORT,
    smtpTlsCert: e.SMTP_TLS_CERT,
    smtpTlsKey: e.SMTP_TLS_KEY,
    bounceSmtpPort: e.BOUNCE_SMTP_PORT,
    bounceDomain: e.BOUNCE_DOMAIN,
    bounceSmtpMaxBytes: e.BOUNCE_SMTP_MAX_BYTES,
    bounceSmtpRatePerMinute: e.BOUNCE_SMTP_RATE_PER_MINUTE,
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

export {
  CONFIG_DOCS,
  CONFIG_TABLE_END,
  CONFIG_TABLE_START,
  renderConfigTables,
  TOOL_VARIABLES,
  type VariableDoc,
  withConfigTables,
} from './docs.js';
