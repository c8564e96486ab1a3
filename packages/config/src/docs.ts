import type { EnvVar } from './schema.js';

/** One row of the README's configuration table. */
export interface VariableDoc {
  /** Markdown: what the variable does. */
  meaning: string;
  /** Markdown: the value when unset. */
  default: string;
}

/**
 * The meaning and default of every variable `loadConfig` reads: the one source of the README's
 * configuration table (`npm run docs:config`). Typed over the schema's keys, so a new variable
 * without a row here does not compile.
 */
export const CONFIG_DOCS: Record<EnvVar, VariableDoc> = {
  PORT: {
    meaning: 'HTTP port of the all-in-one process (`npm start`) and of each split-mode process',
    default: '3000',
  },
  HOST: { meaning: 'interface the HTTP servers bind to', default: '`127.0.0.1`' },
  DATA_DIR: { meaning: 'where embedded stores keep data', default: '`./data`' },
  DATABASE_URL: { meaning: 'Postgres server; unset → embedded PGlite', default: 'unset' },
  CLICKHOUSE_URL: { meaning: 'ClickHouse HTTP URL; unset → embedded chDB', default: 'unset' },
  KAFKA_BROKERS: { meaning: 'comma list of `host:port`; unset → Postgres-table log', default: 'unset' },
  KAFKA_TOPIC: {
    meaning: 'the event log topic (1..249 characters of `[A-Za-z0-9._-]`)',
    default: '`tern.email-events`',
  },
  KAFKA_PARTITIONS: {
    meaning: 'partitions of the topic when Tern creates it (an existing topic keeps its own)',
    default: '6',
  },
  KAFKA_SESSION_TIMEOUT_MS: {
    meaning:
      'how long a consumer group waits for a member that stopped heartbeating (a `kill -9`) before its partitions go to the others or its restarted self (6000..300000; heartbeats every tenth of it)',
    default: '10000',
  },
  JWT_SECRET: {
    meaning:
      'HS256 secret for dashboard JWTs (≥ 32 bytes in production); set only one of it, `JWT_PUBLIC_KEY`, `JWT_JWKS_URL`',
    default: 'dev: generated and printed',
  },
  JWT_PUBLIC_KEY: {
    meaning:
      'PEM public key of dashboard JWTs: RSA (RS256/384/512, PS256/384/512), EC P-256/P-384/P-521 (ES256/384/512), Ed25519/Ed448 (EdDSA); an RSA-PSS-only key is refused at start; literal `\\n` are read as line breaks',
    default: 'unset',
  },
  JWT_JWKS_URL: {
    meaning: 'JWKS endpoint of an identity provider that signs dashboard JWTs',
    default: 'unset',
  },
  INGEST_TOKEN: {
    meaning: 'bearer token of the sending pipeline on `POST /events` (≥ 32 bytes in production)',
    default: 'dev: generated and printed',
  },
  METRICS_TOKEN: {
    meaning:
      'bearer token of `GET /metrics` (≥ 16 characters): when set, `/metrics` answers only `Authorization: Bearer <token>` (401 otherwise); unset in production → `/metrics` is not served (404)',
    default: 'unset: public in development, off in production',
  },
  OPEN_DEDUP_SECONDS: {
    meaning:
      'an open is recorded once per email and reader (address + User-Agent) within this many seconds (0..86400; 0 → every pixel fetch); per process',
    default: '3600',
  },
  TRACKING_SECRET: {
    meaning: 'HMAC key of tracking and unsubscribe tokens (≥ 16 characters)',
    default: 'dev: generated and kept',
  },
  RETENTION_DAYS: { meaning: 'default log retention in days (1..3650); per-tenant override', default: '90' },
  TRUST_PROXY: {
    meaning:
      "which reverse proxies to believe about the client address (`X-Forwarded-For`, Fastify `trustProxy`): `true` every hop (only when nothing reaches Tern but the proxy), a number of hops, or a comma list of the proxies' addresses or CIDR ranges (`10.0.0.0/8,loopback`). Rate limits count per client address: behind a proxy without it, every client shares the proxy's budget",
    default: "`false` (the socket's peer is the client)",
  },
  SHUTDOWN_TIMEOUT_MS: {
    meaning:
      'after SIGTERM/SIGINT the process exits within this many milliseconds (1000..600000) whatever hangs, logging each component that did not finish',
    default: '25000',
  },
  RATE_LIMIT_PER_MINUTE: {
    meaning:
      'query API requests per credential (else per client address) per minute; `0` turns the limit off',
    default: '1200',
  },
  SEND_RATE_PER_SECOND: {
    meaning:
      'emails per second a tenant’s mail is handed to the provider at most, unless its settings name a `sendRatePerSecond`; `0` = unlimited (SPEC §23, [sending](docs/sending.md))',
    default: '`0`, `100` with `NODE_ENV=production`',
  },
  SEND_RATE_MAX_PER_SECOND: {
    meaning:
      'the operator’s ceiling on a tenant’s send rate (emails/s): a tenant’s `sendRatePerSecond` above it → 400, a rate stored before is applied at most at the ceiling; `0` = no ceiling (issue 40 item 9, [sending](docs/sending.md))',
    default: '`SEND_RATE_PER_SECOND` (tenants may only lower the server’s rate)',
  },
  WEBHOOK_ALLOW_PRIVATE: {
    meaning: 'webhook URLs may be `http://` and reach loopback/private/link-local addresses',
    default: '`true`, `false` with `NODE_ENV=production`',
  },
  WEBHOOK_SECRETS_KEY: {
    meaning:
      'server key sealing webhook signing secrets and the DKIM keys of sending domains (AES-256-GCM, a key per use, ≥ 16 characters); required in production',
    default: 'dev: generated and kept',
  },
  ENCRYPTION_KEY: {
    meaning:
      'server key of crypto-shredding: wraps the per-recipient data keys of personal fields in the event log (≥ 32 bytes; [architecture](docs/architecture.md#personal-data-and-erasure-spec-14)); required in production',
    default: 'dev: generated and kept',
  },
  SMTP_URL: {
    meaning:
      'mail relay of the sender (`smtp://` or `smtps://user:pass@host:port`); unset → the built-in sandbox provider',
    default: 'unset',
  },
  SMTP_MAX_CONNECTIONS: {
    meaning:
      'cap of the messages in flight to the relay of `SMTP_URL`, and so of the connections open to it (reused from message to message, nodemailer `pool`): the sender starts at `SMTP_START_CONNECTIONS`, grows while the relay takes mail and halves when it pushes back (421, 4xx, refused connections); `0` = a new connection per message; the relay URL’s own `?maxConnections=` wins ([sending](docs/sending.md#pooled-smtp-connections))',
    default: '`256`',
  },
  SMTP_START_CONNECTIONS: {
    meaning:
      'messages in flight (connections) to the relay before it has pushed back or taken any: what a small relay takes; grows from there up to `SMTP_MAX_CONNECTIONS` ([sending](docs/sending.md#pooled-smtp-connections))',
    default: '`5`',
  },
  SMTP_MAX_MESSAGES: {
    meaning:
      'messages sent over one pooled connection to the relay before it is closed and a new one opened; the relay URL’s own `?maxMessages=` wins',
    default: '`100`',
  },
  PUBLIC_URL: {
    meaning:
      'base URL users reach the api at: dashboard link, tracking and unsubscribe links; required in production by a split-mode process that writes links (`--services` with `sender` or `api`: the sender, the api with its campaign fan-out and sequences)',
    default: 'dev: own address with the api, else `http://127.0.0.1:3000`',
  },
  NODE_ENV: {
    meaning: '`development`, `production` (secrets required, private webhook targets refused) or `test`',
    default: '`development`',
  },
  LOG_LEVEL: {
    meaning:
      'pino level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`. At `info`, one line per request ' +
      '(`request completed`: method, masked URL, status, time). Standard output is written asynchronously and ' +
      'flushed when the process exits, a crash included',
    default: '`info`',
  },
  JWT_MAX_LIFETIME_DAYS: {
    meaning: 'dashboard JWTs whose `exp` is further ahead are refused',
    default: '30',
  },
  PROJECTOR_STALL_SECONDS: {
    meaning: '`/ready` 503 when the projector made no progress this long while lag > 0',
    default: '60',
  },
  EVENT_STREAM_DAYS: {
    meaning:
      'how long the event stream (`GET /events`, `/events/stream`; SPEC §25) keeps events: an older cursor answers 410 (never longer than the tenant’s retention)',
    default: '30',
  },
  HEAP_GROWTH_PERCENT: {
    meaning:
      "V8's heap growing factor, 1 + n/100: a busy process's heap stays near its live set times that, where V8's own rule lets it reach 4× ([architecture](docs/architecture.md#the-heap-under-load)); `0`: V8's rule",
    default: '50',
  },
  EVENT_PAGE_CACHE_MB: {
    meaning:
      'MiB of `GET /events` pages one api process keeps: a page read again is answered from memory once one lookup shows the stream unchanged under it ([architecture](docs/architecture.md#the-event-stream-spec-25)); `0`: none',
    default: '32',
  },
  DEDUP_WINDOW_DAYS: {
    meaning:
      'how long applied event ids (and consumed Postgres-table log records) are kept ([reliability](docs/reliability.md))',
    default: '7',
  },
  INGEST_WORKERS: {
    meaning:
      'processes of `npm run start:ingest` (node:cluster, one port); the all-in-one `npm start` stays one process',
    default: 'one per core',
  },
  DNS_SERVERS: {
    meaning:
      'resolvers of the sending-domain checks (SPEC §20): comma list of `ip:port` (`[v6]:port` for IPv6), e.g. `127.0.0.1:5353`',
    default: "the system's resolvers",
  },
  SES_TOPIC_ARNS: {
    meaning:
      'comma list of the SNS topic ARNs whose SES notifications `POST /providers/ses` accepts (SPEC §21); signatures are checked against the certificate from `sns.<region>.amazonaws.com`',
    default: 'unset: no `/providers/ses`',
  },
  SENDGRID_WEBHOOK_PUBLIC_KEY: {
    meaning:
      'verification key of SendGrid’s signed Event Webhook (the base64 key its settings show, or PEM) for `POST /providers/sendgrid`',
    default: 'unset: no `/providers/sendgrid`',
  },
  POSTMARK_WEBHOOK_USER: {
    meaning:
      'basic-auth user put in the Postmark webhook URL of `POST /providers/postmark` (set with the password)',
    default: 'unset: no `/providers/postmark`',
  },
  POSTMARK_WEBHOOK_PASSWORD: {
    meaning: 'basic-auth password of `POST /providers/postmark` (≥ 16 characters)',
    default: 'unset: no `/providers/postmark`',
  },
  MAILGUN_WEBHOOK_SIGNING_KEY: {
    meaning: 'Mailgun’s webhook signing key (HMAC-SHA256 of timestamp + token) for `POST /providers/mailgun`',
    default: 'unset: no `/providers/mailgun`',
  },
  RESEND_WEBHOOK_SECRET: {
    meaning: 'Resend’s webhook signing secret (`whsec_…`, Standard Webhooks) for `POST /providers/resend`',
    default: 'unset: no `/providers/resend`',
  },
  SEND_CONTENT_MAX_MB: {
    meaning:
      'MiB of message content the send routes and SMTP submission hold at once, one budget per process (an HTTP request its `Content-Length`, from before its body is read to its answer; an SMTP message its bytes as its DATA arrives, to its answer); past it → 429 `RATE_LIMITED` with `Retry-After`, over SMTP `451 4.3.1` (the rest of the message is read and dropped) (issue 40 item 8)',
    default: '96',
  },
  SEND_CONTENT_MAX_MB_PER_TENANT: {
    meaning: 'the same, for one tenant: its large sends never fill the whole budget',
    default: '48',
  },
  DOMAINS_MAX_PER_TENANT: {
    meaning:
      'sending domains a tenant may have; one more → 409 `DOMAIN_LIMIT_REACHED` (each add generates an RSA-2048 key; issue 40 item 11)',
    default: '50',
  },
  BOUNCE_SUBDOMAIN: {
    meaning:
      'label under each sending domain that carries the envelope sender (return path); its MX and SPF are records to publish',
    default: '`tern-bounces`',
  },
  BOUNCE_MX_HOST: {
    meaning: 'the MX every bounce subdomain points to (where bounces come back, SPEC §21)',
    default: 'the host of `PUBLIC_URL`',
  },
  SPF_INCLUDE: {
    meaning:
      "domain the bounce subdomain's SPF record includes (your relay's SPF, e.g. `amazonses.com`); unset → the relay of `SMTP_URL` itself (`ip4:`/`a:`)",
    default: 'unset',
  },
  SMTP_SUBMISSION_PORT: {
    meaning:
      'port of SMTP submission ([sending](docs/sending.md#smtp-submission-spec-22)): STARTTLS, AUTH PLAIN/LOGIN with an API key holding `email:send` as password; served by `npm start` and `--services=submission`',
    default: 'unset (off)',
  },
  SMTP_TLS_CERT: {
    meaning:
      'PEM certificate (chain) file of SMTP submission’s STARTTLS; required with `SMTP_SUBMISSION_PORT` in production',
    default: 'dev: a self-signed pair kept under `DATA_DIR/smtp-tls/`',
  },
  SMTP_TLS_KEY: {
    meaning: 'PEM private key file of SMTP submission’s STARTTLS (with `SMTP_TLS_CERT`)',
    default: 'dev: generated with the certificate',
  },
  BOUNCE_SMTP_PORT: {
    meaning:
      'port of the bounce mailbox (SPEC §21): an SMTP listener on `HOST` taking DSNs and ARF complaints for the bounce subdomains of verified domains and `BOUNCE_DOMAIN` ([feedback](docs/feedback.md)); `0` = any free port',
    default: 'unset (no listener)',
  },
  BOUNCE_DOMAIN: {
    meaning:
      'bounce host of the VERP envelope sender of mail no verified domain signs (`b+<emailId>.<hmac>@BOUNCE_DOMAIN`); its MX must reach the bounce mailbox',
    default: 'unset (such mail keeps its From as envelope sender)',
  },
  BOUNCE_SMTP_MAX_BYTES: {
    meaning: 'largest message the bounce mailbox accepts (larger: `552`)',
    default: '10485760 (10 MiB)',
  },
  BOUNCE_SMTP_RATE_PER_MINUTE: {
    meaning:
      'messages one client address may deliver to the bounce mailbox per minute (more: `421`); the bounce mailbox’s own value of `SMTP_LISTEN_MESSAGES_PER_MINUTE`',
    default: '300',
  },
  INBOUND_SMTP_PORT: {
    meaning:
      'port of the inbound MX listener (SPEC §24, [inbound](docs/inbound.md)): STARTTLS offered with `SMTP_TLS_*`, mail taken only for receiving addresses; served by `npm start` and `--services=inbound`; `0` = any free port',
    default: 'unset (off)',
  },
  INBOUND_DOMAIN: {
    meaning:
      'domain under which every tenant receives without DNS of its own: `<anything>@<tenant slug>.INBOUND_DOMAIN` (its wildcard MX must reach the listener)',
    default: 'unset (only receiving domains)',
  },
  INBOUND_MX_HOST: {
    meaning: 'the MX host of receiving domains (their `inbound_mx` record: `10 INBOUND_MX_HOST`)',
    default: 'the host of `PUBLIC_URL`',
  },
  INBOUND_MAX_BYTES: {
    meaning: 'largest inbound message (larger: `552`)',
    default: '41943040 (40 MiB)',
  },
  SMTP_LISTEN_MAX_CONNECTIONS: {
    meaning:
      'every SMTP listener (submission, bounce mailbox, inbound MX): open connections at most per listener; more get `421` and are closed ([SMTP listeners](docs/reliability.md#smtp-listeners))',
    default: '500',
  },
  SMTP_LISTEN_MAX_CONNECTIONS_PER_CLIENT: {
    meaning:
      'every SMTP listener: open connections per client address (IPv6: per /64) at most; more get `421`',
    default: '20',
  },
  SMTP_LISTEN_IDLE_SECONDS: {
    meaning: 'every SMTP listener: a connection silent this long is closed (`421`)',
    default: '60',
  },
  SMTP_LISTEN_AUTH_SECONDS: {
    meaning:
      'SMTP listeners that require AUTH (submission): a session not authenticated this long after connect is closed, however slowly bytes arrive',
    default: '30',
  },
  SMTP_LISTEN_SESSION_SECONDS: {
    meaning:
      'every SMTP listener: any session is closed this long after connect, however slowly bytes arrive',
    default: '300',
  },
  SMTP_LISTEN_MAX_AUTH_FAILURES: {
    meaning: 'failed AUTH attempts one connection may make; the last one closes it (`421`)',
    default: '3',
  },
  SMTP_LISTEN_MAX_RECIPIENTS: {
    meaning:
      'every SMTP listener: RCPT TO per message at most (more: `452`); submission keeps its own lower 50 (SPEC §22)',
    default: '100',
  },
  SMTP_LISTEN_MAX_RECIPIENTS_PER_CONNECTION: {
    meaning: 'every SMTP listener: RCPT TO commands per connection at most (more: `421`, closed)',
    default: '1000',
  },
  SMTP_LISTEN_MESSAGES_PER_MINUTE: {
    meaning:
      'every SMTP listener: messages (MAIL FROM) one client address may start per minute (more: `421`)',
    default: '300',
  },
  SMTP_LISTEN_RECIPIENTS_PER_MINUTE: {
    meaning: 'every SMTP listener: RCPT TO commands one client address may send per minute (more: `421`)',
    default: '1000',
  },
};
