import type { ClickHouseClient } from '@clickhouse/client';
import type { JwtVerifier } from '@tern/auth';
import type { ReadinessCheck } from '@tern/http';
import type { Logger } from '@tern/kernel';
import type { Keyring } from '@tern/privacy';
import type { ReadModelFeed } from '@tern/stores';
import type { FastifyBaseLogger } from 'fastify';
import type pg from 'pg';
import type { DomainPolicy } from './domains/policy.js';
import type { DomainRouteOptions } from './domains/routes.js';
import type { ProviderRouteOptions } from './providers/routes.js';
import type { EventStreamOptions, SendingDeps } from './route-deps.js';
import type { ApiStores } from './stores.js';
import type { WebhookRouteOptions } from './webhooks/options.js';

// The options of `apiRoutes`, `createApiApp` and `createSendingApp`, in small groups of one domain
// each (issue 41 item 3: no dependency type over 8 fields; test/architecture/option-fields.ts).

/** Where the API reads and writes. */
export interface ApiData {
  pool: pg.Pool;
  ch: ClickHouseClient;
  /** Repositories to use instead of their owner's over `pool` (a test's fake); the rest are built here. */
  stores?: Partial<ApiStores>;
  /**
   * Changes of the read models, heard from Postgres: with it, repeated reads (logs pages, analytics)
   * are memoised and cost no query (`read-context.ts`). Absent: every read queries the stores.
   */
  readModel?: ReadModelFeed;
}

/** Budgets, rates and timers: how much a tenant or an instance may do, and how often. All have defaults. */
export interface ApiLimits {
  /**
   * Requests per credential (else per client address) and window; false turns it off. Default
   * 1200 per minute. Counters live in each instance's memory.
   */
  rateLimit?: { max: number; timeWindowMs: number } | false;
  /** How long an instance trusts a looked-up API key; bounds how late it sees a revocation elsewhere. ≤ 5000. */
  keyCacheTtlMs?: number;
  /** How often key uses are written to `last_used_at`. Default 10 s. */
  lastUsedFlushMs?: number;
  /** Largest CSV body `POST /contacts/import` reads; default 64 MiB. */
  importMaxBytes?: number;
  /** Server default send rate per tenant (SEND_RATE_PER_SECOND); default 0 = unlimited. */
  sendRatePerSecond?: number;
  /** The most a tenant may set (SEND_RATE_MAX_PER_SECOND, issue 40 item 9); default 0 = no ceiling. */
  sendRateMaxPerSecond?: number;
  /** Limits and timers of `GET /events` and `GET /events/stream`. */
  eventStream?: EventStreamOptions;
}

/** The business rules the routes apply: the clock, how long data is kept, windows, sending domains. */
export interface ApiPolicy {
  /** Business clock (periods, retention, key expiry, timestamps written). Default: the wall clock. */
  now?: () => Date;
  /** Server default retention in days (RETENTION_DAYS). */
  retentionDays: number;
  /** EVENT_STREAM_DAYS (SPEC §25), default 30. */
  eventStreamDays?: number;
  /** OPEN_DEDUP_SECONDS: one open per email and reader within this window (default 3600). */
  openDedupSeconds?: number;
  /** When an erasure's scrub runs again (default 45 s). */
  erasureRescrubMs?: number;
  /** Whether a send's From domain must be verified (SPEC §20); absent → any domain. */
  domainPolicy?: DomainPolicy;
}

/** The optional parts of the API: each group of routes is mounted only when what it needs is given. */
export interface ApiFeatures {
  /** Sending and tracking (SPEC §11): mounted only when given (they append to the event log). */
  sending?: SendingDeps;
  /** TRACKING_SECRET: signs unsubscribe and tracking tokens. Absent: no `/u/:token` nor `/t/*` routes. */
  trackingSecret?: string;
  /** Outgoing webhooks (SPEC §17): secret sealing and URL policy. Absent → no `/webhooks*` routes. */
  webhooks?: WebhookRouteOptions;
  /** Data keys of personal fields (SPEC §14): `POST /contacts/erase` and `/inbound*` are mounted only when given. */
  keyring?: Keyring;
  /** INBOUND_DOMAIN (SPEC §24): the tenants' addresses under it; `/inbound*` need `keyring`. */
  inboundDomain?: string | undefined;
  /** Sending domains (SPEC §20): `/domains*` are mounted only when given. */
  domains?: DomainRouteOptions;
  /** Provider notification credentials (SPEC §21): `/providers/*` need them and `sending`. */
  providers?: ProviderRouteOptions;
}

/** What `apiRoutes` is given. */
export interface ApiRoutesOptions {
  data: ApiData;
  jwt: JwtVerifier;
  policy: ApiPolicy;
  limits?: ApiLimits;
  features?: ApiFeatures;
  logger?: Logger;
  /**
   * `sending`: only `POST /emails/send|batch` and `/emails/:id*` (with the same guards), for a process
   * that serves SMTP submission alone (SPEC §22) and has no ClickHouse. Default `full`.
   */
  surface?: 'full' | 'sending';
}

export interface ApiLoggerOptions {
  level?: string;
  /** Where log lines go (a pino destination); default stdout. */
  stream?: NodeJS.WritableStream;
}

/** The HTTP app around the routes: its logger, readiness checks, proxy trust, OpenAPI document. */
export interface ApiHttpOptions {
  /**
   * Options (level, destination) for a logger built here with credential redaction, or a ready
   * logger (e.g. the all-in-one process's pino, which must redact itself). false or absent: no logs.
   */
  logger?: ApiLoggerOptions | FastifyBaseLogger | false;
  /** Checks of `/ready`; default Postgres and ClickHouse. The all-in-one process adds the event log. */
  readiness?: readonly ReadinessCheck[];
  /**
   * TRUST_PROXY: Fastify's `trustProxy`, which proxies' `X-Forwarded-For` names the client (the
   * rate limits count per client address). Default false: the socket's peer is the client.
   */
  trustProxy?: boolean | number | string[];
  /** PUBLIC_URL: the OpenAPI document's `servers`. */
  publicUrl?: string;
  /** The process also mounts `POST /events` (ingest): the document declares its tag and security scheme. */
  documentIngest?: boolean;
}

/**
 * What `createApiApp` is given: the groups of the routes (`ApiRoutesOptions`, handed to `apiRoutes`
 * as they are — not a copy of each field) and what the HTTP app around them needs (`http`).
 */
export interface ApiDeps extends Omit<ApiRoutesOptions, 'logger' | 'surface'> {
  http?: ApiHttpOptions;
}

/** What `createSendingApp` is given: the sending routes' share of `ApiDeps`, no ClickHouse. */
export interface SendingAppDeps {
  data: Pick<ApiData, 'pool' | 'stores'>;
  jwt: JwtVerifier;
  policy: Pick<ApiPolicy, 'now' | 'retentionDays' | 'domainPolicy'>;
  limits?: Pick<ApiLimits, 'rateLimit'>;
  sending: SendingDeps;
  logger?: ApiHttpOptions['logger'];
}
