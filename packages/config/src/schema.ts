import { z } from 'zod';
import { DEFAULT_RETENTION_DAYS, LOG_LEVELS, MIN_SECRET_BYTES, NODE_ENVS } from './config.js';
import {
  boolVar,
  brokersVar,
  dnsServersVar,
  enumVar,
  hostVar,
  intVar,
  SNS_TOPIC_ARN,
  trustProxyVar,
  urlVar,
} from './vars.js';

// Keys are the variable names, so a zod issue path names the variable directly.
// Every key has a row in `CONFIG_DOCS` (docs.ts), which the README's configuration table is made from.
export const envSchema = z.object({
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
  KAFKA_SESSION_TIMEOUT_MS: intVar(6_000, 300_000).default(10_000),
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
  RETENTION_DAYS: intVar(1, 3650).default(DEFAULT_RETENTION_DAYS),
  RATE_LIMIT_PER_MINUTE: intVar(0, 1_000_000).default(1200),
  SEND_RATE_PER_SECOND: intVar(0, 1_000_000).optional(),
  SEND_RATE_MAX_PER_SECOND: intVar(0, 1_000_000).optional(),
  WEBHOOK_ALLOW_PRIVATE: boolVar.optional(),
  WEBHOOK_SECRETS_KEY: z.string().min(16, { error: 'must be at least 16 characters' }).optional(),
  ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.byteLength(v, 'utf8') >= MIN_SECRET_BYTES, {
      error: `must be at least ${MIN_SECRET_BYTES} bytes`,
    })
    .optional(),
  SMTP_URL: urlVar(['smtp:', 'smtps:']).optional(),
  SMTP_MAX_CONNECTIONS: intVar(0, 1000).default(256),
  SMTP_START_CONNECTIONS: intVar(1, 1000).default(5),
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
  EVENT_STREAM_DAYS: intVar(1, 3650).default(30),
  EVENT_PAGE_CACHE_MB: intVar(0, 65_536).default(32),
  HEAP_GROWTH_PERCENT: intVar(0, 300).default(50),
  INGEST_WORKERS: intVar(1, 256).optional(),
  DNS_SERVERS: dnsServersVar.optional(),
  BOUNCE_SUBDOMAIN: hostVar(1).default('tern-bounces'),
  DOMAINS_MAX_PER_TENANT: intVar(1, 100_000).default(50),
  SEND_CONTENT_MAX_MB: intVar(41, 100_000).default(96),
  SEND_CONTENT_MAX_MB_PER_TENANT: intVar(41, 100_000).default(48),
  BOUNCE_MX_HOST: hostVar(2).optional(),
  SPF_INCLUDE: hostVar(2).optional(),
  SMTP_SUBMISSION_PORT: intVar(1, 65535).optional(),
  SMTP_TLS_CERT: z.string().optional(),
  SMTP_TLS_KEY: z.string().optional(),
  BOUNCE_SMTP_PORT: intVar(0, 65535).optional(),
  BOUNCE_DOMAIN: hostVar(2).optional(),
  BOUNCE_SMTP_MAX_BYTES: intVar(1024, 50 * 1024 * 1024).default(10 * 1024 * 1024),
  BOUNCE_SMTP_RATE_PER_MINUTE: intVar(1, 1_000_000).default(300),
  INBOUND_SMTP_PORT: intVar(0, 65535).optional(),
  INBOUND_DOMAIN: hostVar(2).optional(),
  INBOUND_MX_HOST: hostVar(2).optional(),
  INBOUND_MAX_BYTES: intVar(1024, 100 * 1024 * 1024).default(40 * 1024 * 1024),
  SMTP_LISTEN_MAX_CONNECTIONS: intVar(1, 100_000).default(500),
  SMTP_LISTEN_MAX_CONNECTIONS_PER_CLIENT: intVar(1, 100_000).default(20),
  SMTP_LISTEN_IDLE_SECONDS: intVar(5, 3600).default(60),
  SMTP_LISTEN_AUTH_SECONDS: intVar(5, 3600).default(30),
  SMTP_LISTEN_SESSION_SECONDS: intVar(10, 86_400).default(300),
  SMTP_LISTEN_MAX_AUTH_FAILURES: intVar(1, 100).default(3),
  SMTP_LISTEN_MAX_RECIPIENTS: intVar(1, 10_000).default(100),
  SMTP_LISTEN_MAX_RECIPIENTS_PER_CONNECTION: intVar(1, 1_000_000).default(1000),
  SMTP_LISTEN_MESSAGES_PER_MINUTE: intVar(1, 1_000_000).default(300),
  SMTP_LISTEN_RECIPIENTS_PER_MINUTE: intVar(1, 1_000_000).default(1000),
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
