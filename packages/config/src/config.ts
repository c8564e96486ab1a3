import type { SmtpListenerLimits } from '@tern/smtp-limits';

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
  /** KAFKA_SESSION_TIMEOUT_MS: how long a consumer group waits for a member that stopped answering (issue 49, item 4). */
  kafkaSessionTimeoutMs: number;
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
  /** Issue 40 item 9: the most a tenant's send rate may be (emails/s); 0 = no ceiling. */
  sendRateMaxPerSecond: number;
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
  /** Cap of the messages in flight (connections) to the relay of `smtpUrl`; 0 = a new connection per message. */
  smtpMaxConnections: number;
  /** Messages in flight to the relay before it pushed back or took any (issue 45); grows up to the cap. */
  smtpStartConnections: number;
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
  /** EVENT_STREAM_DAYS: how long the event stream keeps events (SPEC §25). */
  eventStreamDays: number;
  /** EVENT_PAGE_CACHE_MB: MiB of event-stream pages one api process keeps in memory (0: none). */
  eventPageCacheMb: number;
  /**
   * HEAP_GROWTH_PERCENT: how far V8 lets the heap grow past what the last full collection kept
   * before it collects again (`boundHeapGrowth`, packages/stores/src/memory.ts); 0: V8's own rule.
   */
  heapGrowthPercent: number;
  /**
   * Processes serving `--services=ingest` (node:cluster, one port): undefined → one per core.
   * Only an ingest-only process forks; every other topology stays one process.
   */
  ingestWorkers: number | undefined;
  /** DNS_SERVERS: resolvers of sending-domain checks (`ip:port`, SPEC §20); undefined → the system's. */
  dnsServers: string[] | undefined;
  /** SEND_CONTENT_MAX_MB(_PER_TENANT): MiB of content in flight in the send routes and SMTP submission (issue 40 item 8). */
  sendContentMaxMb: number;
  sendContentMaxMbPerTenant: number;
  /** DOMAINS_MAX_PER_TENANT: sending domains a tenant may have (issue 40 item 11). */
  domainsMaxPerTenant: number;
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
  /** INBOUND_SMTP_PORT: the MX listener of inbound email (SPEC §24); undefined → off (0: any free port). */
  inboundSmtpPort: number | undefined;
  /** INBOUND_DOMAIN: tenants receive at `<anything>@<slug>.<INBOUND_DOMAIN>` without DNS of their own. */
  inboundDomain: string | undefined;
  /** INBOUND_MX_HOST: the MX host receiving domains point to; undefined → the host of PUBLIC_URL. */
  inboundMxHost: string | undefined;
  /** INBOUND_MAX_BYTES: largest inbound message (552 past it). */
  inboundMaxBytes: number;
  /**
   * SMTP_LISTEN_*: the connection limits and deadlines every SMTP listener shares (submission,
   * bounce mailbox, inbound MX).
   */
  smtpListenerLimits: SmtpListenerLimitsConfig;
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

/** The SMTP_LISTEN_* variables, in milliseconds where they are times: `@tern/smtp-limits`' own shape. */
export type SmtpListenerLimitsConfig = SmtpListenerLimits;

/** Fastify's `trustProxy` as TRUST_PROXY sets it. */
export type TrustProxy = boolean | number | string[];

/** Fewest bytes of `JWT_SECRET` and `INGEST_TOKEN` in production (HS256 wants ≥ 256 bits). */
export const MIN_SECRET_BYTES = 32;

/** RETENTION_DAYS' default: the past days of the delivery log kept. */
export const DEFAULT_RETENTION_DAYS = 90;

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
