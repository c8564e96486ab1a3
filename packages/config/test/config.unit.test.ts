import { DEFAULT_SMTP_LISTENER_LIMITS } from '@tern/smtp-limits';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_PRODUCTION_SEND_RATE, loadConfig } from '../src/index.js';

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

const LONG = 'x'.repeat(32);

describe('loadConfig', () => {
  it('applies the SPEC §2 defaults to an empty environment', () => {
    expect(loadConfig({})).toEqual({
      port: 3000,
      host: '127.0.0.1',
      dataDir: './data',
      databaseUrl: undefined,
      clickhouseUrl: undefined,
      kafkaBrokers: undefined,
      kafkaTopic: 'tern.email-events',
      kafkaPartitions: 6,
      kafkaSessionTimeoutMs: 10_000,
      jwtSecret: undefined,
      jwtPublicKey: undefined,
      jwtJwksUrl: undefined,
      ingestToken: undefined,
      retentionDays: 90,
      rateLimitPerMinute: 1200,
      sendRatePerSecond: 0,
      sendRateMaxPerSecond: 0,
      webhookAllowPrivate: true,
      webhookSecretsKey: undefined,
      publicUrl: undefined,
      nodeEnv: 'development',
      logLevel: 'info',
      jwtMaxLifetimeDays: 30,
      projectorStallSeconds: 60,
      dedupWindowDays: 7,
      ingestWorkers: undefined,
      dnsServers: undefined,
      bounceSubdomain: 'tern-bounces',
      domainsMaxPerTenant: 50,
      sendContentMaxMb: 96,
      sendContentMaxMbPerTenant: 48,
      eventStreamDays: 30,
      eventPageCacheMb: 32,
      heapGrowthPercent: 50,
      bounceMxHost: undefined,
      spfInclude: undefined,
      smtpMaxConnections: 256,
      smtpStartConnections: 5,
      smtpMaxMessages: 100,
      bounceSmtpPort: undefined,
      bounceDomain: undefined,
      bounceSmtpMaxBytes: 10 * 1024 * 1024,
      bounceSmtpRatePerMinute: 300,
      inboundSmtpPort: undefined,
      inboundDomain: undefined,
      inboundMxHost: undefined,
      inboundMaxBytes: 40 * 1024 * 1024,
      // The listeners' own defaults, so the variables' defaults cannot drift from them.
      smtpListenerLimits: { ...DEFAULT_SMTP_LISTENER_LIMITS },
      trustProxy: false,
      shutdownTimeoutMs: 25_000,
      metricsToken: undefined,
      openDedupSeconds: 3600,
    });
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATA_DIR: '/var/lib/tern',
      DATABASE_URL: 'postgres://tern:pw@db:5432/tern',
      CLICKHOUSE_URL: 'http://ch:8123',
      KAFKA_BROKERS: 'k1:9092, k2:9092,,[::1]:9093',
      KAFKA_TOPIC: 'events',
      KAFKA_PARTITIONS: '12',
      KAFKA_SESSION_TIMEOUT_MS: '8000',
      JWT_SECRET: 's3cret',
      INGEST_TOKEN: 'token-token-token',
      RETENTION_DAYS: '30',
      RATE_LIMIT_PER_MINUTE: '0',
      SEND_RATE_PER_SECOND: '25',
      WEBHOOK_ALLOW_PRIVATE: 'false',
      WEBHOOK_SECRETS_KEY: 'a-webhook-secrets-key',
      ENCRYPTION_KEY: 'an-encryption-key-of-32-bytes-or-more',
      SMTP_URL: 'smtps://user:pw@relay.example.com:465',
      SMTP_MAX_CONNECTIONS: '0',
      SMTP_MAX_MESSAGES: '500',
      PUBLIC_URL: 'https://mail.example.com/',
      NODE_ENV: 'test',
      LOG_LEVEL: 'debug',
      JWT_MAX_LIFETIME_DAYS: '7',
      PROJECTOR_STALL_SECONDS: '30',
      DEDUP_WINDOW_DAYS: '14',
      EVENT_PAGE_CACHE_MB: '8',
      HEAP_GROWTH_PERCENT: '0',
      INGEST_WORKERS: '3',
      DNS_SERVERS: '127.0.0.1:5353, 10.0.0.2,[::1]:53',
      BOUNCE_SUBDOMAIN: 'Bounces',
      BOUNCE_MX_HOST: 'feedback.tern.example.net.',
      SPF_INCLUDE: 'spf.tern.example.net',
      BOUNCE_SMTP_PORT: '2525',
      BOUNCE_DOMAIN: 'Bounces.Tern.Example.NET',
      BOUNCE_SMTP_MAX_BYTES: '2048',
      BOUNCE_SMTP_RATE_PER_MINUTE: '10',
      INBOUND_SMTP_PORT: '2526',
      INBOUND_DOMAIN: 'in.tern.example.net',
      INBOUND_MX_HOST: 'mx.tern.example.net',
      INBOUND_MAX_BYTES: '4096',
      SMTP_LISTEN_MAX_CONNECTIONS: '50',
      SMTP_LISTEN_MAX_CONNECTIONS_PER_CLIENT: '4',
      SMTP_LISTEN_IDLE_SECONDS: '20',
      SMTP_LISTEN_AUTH_SECONDS: '10',
      SMTP_LISTEN_SESSION_SECONDS: '120',
      SMTP_LISTEN_MAX_AUTH_FAILURES: '2',
      SMTP_LISTEN_MAX_RECIPIENTS: '25',
      SMTP_LISTEN_MAX_RECIPIENTS_PER_CONNECTION: '200',
      SMTP_LISTEN_MESSAGES_PER_MINUTE: '60',
      SMTP_LISTEN_RECIPIENTS_PER_MINUTE: '240',
      TRUST_PROXY: '10.0.0.0/8, loopback,2001:db8::1',
      SHUTDOWN_TIMEOUT_MS: '5000',
      METRICS_TOKEN: 'metrics-token-0123456789',
      OPEN_DEDUP_SECONDS: '600',
      SMTP_START_CONNECTIONS: '2',
    });
    expect(config).toEqual({
      port: 8080,
      host: '0.0.0.0',
      dataDir: '/var/lib/tern',
      databaseUrl: 'postgres://tern:pw@db:5432/tern',
      clickhouseUrl: 'http://ch:8123',
      kafkaBrokers: ['k1:9092', 'k2:9092', '[::1]:9093'],
      kafkaTopic: 'events',
      kafkaPartitions: 12,
      kafkaSessionTimeoutMs: 8000,
      jwtSecret: 's3cret',
      jwtPublicKey: undefined,
      jwtJwksUrl: undefined,
      ingestToken: 'token-token-token',
      retentionDays: 30,
      rateLimitPerMinute: 0,
      sendRatePerSecond: 25,
      sendRateMaxPerSecond: 25,
      webhookAllowPrivate: false,
      webhookSecretsKey: 'a-webhook-secrets-key',
      encryptionKey: 'an-encryption-key-of-32-bytes-or-more',
      smtpUrl: 'smtps://user:pw@relay.example.com:465',
      smtpMaxConnections: 0,
      smtpStartConnections: 2,
      smtpMaxMessages: 500,
      publicUrl: 'https://mail.example.com',
      nodeEnv: 'test',
      logLevel: 'debug',
      jwtMaxLifetimeDays: 7,
      projectorStallSeconds: 30,
      dedupWindowDays: 14,
      ingestWorkers: 3,
      dnsServers: ['127.0.0.1:5353', '10.0.0.2', '[::1]:53'],
      bounceSubdomain: 'bounces',
      domainsMaxPerTenant: 50,
      sendContentMaxMb: 96,
      sendContentMaxMbPerTenant: 48,
      eventStreamDays: 30,
      eventPageCacheMb: 8,
      heapGrowthPercent: 0,
      bounceMxHost: 'feedback.tern.example.net',
      spfInclude: 'spf.tern.example.net',
      bounceSmtpPort: 2525,
      bounceDomain: 'bounces.tern.example.net',
      bounceSmtpMaxBytes: 2048,
      bounceSmtpRatePerMinute: 10,
      inboundSmtpPort: 2526,
      inboundDomain: 'in.tern.example.net',
      inboundMxHost: 'mx.tern.example.net',
      inboundMaxBytes: 4096,
      smtpListenerLimits: {
        maxConnections: 50,
        maxConnectionsPerClient: 4,
        idleTimeoutMs: 20_000,
        authDeadlineMs: 10_000,
        sessionDeadlineMs: 120_000,
        maxAuthFailures: 2,
        maxRecipientsPerMessage: 25,
        maxRecipientsPerConnection: 200,
        messagesPerMinute: 60,
        recipientsPerMinute: 240,
      },
      trustProxy: ['10.0.0.0/8', 'loopback', '2001:db8::1'],
      shutdownTimeoutMs: 5000,
      metricsToken: 'metrics-token-0123456789',
      openDedupSeconds: 600,
    });
    expect(
      loadConfig({ JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\\nAAAA\\n-----END PUBLIC KEY-----' })
        .jwtPublicKey,
    ).toBe('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----');
    expect(loadConfig({ JWT_JWKS_URL: 'https://auth.example.com/.well-known/jwks.json' }).jwtJwksUrl).toBe(
      'https://auth.example.com/.well-known/jwks.json',
    );
  });

  it('treats empty and blank values as unset', () => {
    const config = loadConfig({ PORT: '', DATABASE_URL: '  ', KAFKA_BROKERS: '' });
    expect(config.port).toBe(3000);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.kafkaBrokers).toBeUndefined();
  });

  it('refuses a PUBLIC_URL that is not an http(s) URL, naming it', () => {
    const err = errorOf(() => loadConfig({ PUBLIC_URL: 'mail.example.com' }));
    expect(err.variables).toEqual(['PUBLIC_URL']);
    expect(err.message).toContain('PUBLIC_URL must be a URL starting with http:// or https://');
  });

  it('ignores variables it does not know', () => {
    expect(loadConfig({ PATH: '/usr/bin', TERN_WHATEVER: 'x' }).port).toBe(3000);
  });

  it('names the variable and the value in one line', () => {
    const err = errorOf(() => loadConfig({ PORT: 'abc' }));
    expect(err.message).toBe('Invalid configuration: PORT must be an integer 1..65535 (got "abc")');
    expect(err.variables).toEqual(['PORT']);
    expect(err.message).not.toContain('\n');
  });

  it.each([
    ['PORT', '0', 'PORT must be an integer 1..65535 (got "0")'],
    ['PORT', '65536', 'PORT must be an integer 1..65535 (got "65536")'],
    ['PORT', '80.5', 'PORT must be an integer 1..65535 (got "80.5")'],
    ['RETENTION_DAYS', '0', 'RETENTION_DAYS must be an integer 1..3650 (got "0")'],
    ['RETENTION_DAYS', '3651', 'RETENTION_DAYS must be an integer 1..3650 (got "3651")'],
    ['RATE_LIMIT_PER_MINUTE', '-1', 'RATE_LIMIT_PER_MINUTE must be an integer 0..1000000 (got "-1")'],
    ['RETENTION_DAYS', 'ninety', 'RETENTION_DAYS must be an integer 1..3650 (got "ninety")'],
    ['KAFKA_PARTITIONS', '-1', 'KAFKA_PARTITIONS must be an integer 1..10000 (got "-1")'],
    [
      'KAFKA_SESSION_TIMEOUT_MS',
      '3000',
      'KAFKA_SESSION_TIMEOUT_MS must be an integer 6000..300000 (got "3000")',
    ],
    ['KAFKA_BROKERS', 'localhost', 'KAFKA_BROKERS must be a comma list of host:port (got "localhost")'],
    ['KAFKA_BROKERS', ',', 'KAFKA_BROKERS must be a comma list of host:port (got ",")'],
    ['KAFKA_TOPIC', 'bad topic', 'KAFKA_TOPIC must be 1..249 characters of [A-Za-z0-9._-] (got "bad topic")'],
    [
      'DATABASE_URL',
      'mysql://db/x',
      'DATABASE_URL must be a URL starting with postgres:// or postgresql:// (got "mysql://db/x")',
    ],
    [
      'CLICKHOUSE_URL',
      'ch:8123',
      'CLICKHOUSE_URL must be a URL starting with http:// or https:// (got "ch:8123")',
    ],
    [
      'JWT_JWKS_URL',
      'not a url',
      'JWT_JWKS_URL must be a URL starting with http:// or https:// (got "not a url")',
    ],
    ['NODE_ENV', 'prod', 'NODE_ENV must be one of development, production, test (got "prod")'],
    [
      'LOG_LEVEL',
      'verbose',
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "verbose")',
    ],
  ])('rejects %s=%j', (variable, value, message) => {
    const err = errorOf(() => loadConfig({ [variable]: value }));
    expect(err.message).toBe(`Invalid configuration: ${message}`);
    expect(err.variables).toEqual([variable]);
  });

  it('reports every bad variable on the same line', () => {
    const err = errorOf(() => loadConfig({ PORT: 'x', RETENTION_DAYS: '0' }));
    expect(err.variables).toEqual(['PORT', 'RETENTION_DAYS']);
    expect(err.message).toBe(
      'Invalid configuration: PORT must be an integer 1..65535 (got "x"); RETENTION_DAYS must be an integer 1..3650 (got "0")',
    );
  });

  it('never echoes a secret or a URL password', () => {
    const bad = errorOf(() => loadConfig({ JWT_PUBLIC_KEY: 'my-private-material' }));
    expect(bad.message).toBe('Invalid configuration: JWT_PUBLIC_KEY must be a PEM public key (value hidden)');
    const url = errorOf(() => loadConfig({ DATABASE_URL: 'mysql://tern:hunter2@db/x' }));
    expect(url.message).not.toContain('hunter2');
    expect(url.message).toContain('"mysql://tern:***@db/x"');
  });

  it('requires a JWT key, an ingest token, a tracking secret, a webhook secrets key and an encryption key in production', () => {
    const err = errorOf(() => loadConfig({ NODE_ENV: 'production' }));
    expect(err.variables).toEqual([
      'JWT_SECRET',
      'INGEST_TOKEN',
      'TRACKING_SECRET',
      'WEBHOOK_SECRETS_KEY',
      'ENCRYPTION_KEY',
    ]);
    expect(err.message).toMatch(
      /^Invalid configuration: JWT_SECRET .* INGEST_TOKEN must be set; TRACKING_SECRET must be set; WEBHOOK_SECRETS_KEY must be set; ENCRYPTION_KEY must be set in production/,
    );
    expect(err.message).not.toContain('\n');
    const config = loadConfig({
      NODE_ENV: 'production',
      JWT_JWKS_URL: 'https://a.example/jwks',
      INGEST_TOKEN: LONG,
      TRACKING_SECRET: 'tracking-secret-0123456789',
      WEBHOOK_SECRETS_KEY: 'webhook-secrets-key-0123456789',
      ENCRYPTION_KEY: LONG,
    });
    expect(config.ingestToken).toBe(LONG);
    expect(config.encryptionKey).toBe(LONG);
    expect(config.trackingSecret).toBe('tracking-secret-0123456789');
    expect(config.webhookSecretsKey).toBe('webhook-secrets-key-0123456789');
    // SPEC §23: a documented send rate per tenant in production, unlimited elsewhere.
    expect(config.sendRatePerSecond).toBe(DEFAULT_PRODUCTION_SEND_RATE);
    // Issue 40 item 9: the server's rate is also the ceiling, unless SEND_RATE_MAX_PER_SECOND names one.
    expect(config.sendRateMaxPerSecond).toBe(DEFAULT_PRODUCTION_SEND_RATE);
  });

  it('names WEBHOOK_SECRETS_KEY alone when it is the only production secret missing', () => {
    const err = errorOf(() =>
      loadConfig({
        NODE_ENV: 'production',
        JWT_SECRET: LONG,
        INGEST_TOKEN: LONG,
        TRACKING_SECRET: 'tracking-secret-0123456789',
        ENCRYPTION_KEY: LONG,
      }),
    );
    expect(err.variables).toEqual(['WEBHOOK_SECRETS_KEY']);
    expect(err.message).toBe(
      'Invalid configuration: WEBHOOK_SECRETS_KEY must be set in production (dev values are generated only outside production)',
    );
  });

  it('refuses an ENCRYPTION_KEY shorter than 32 bytes in any environment, without echoing it', () => {
    const err = errorOf(() => loadConfig({ ENCRYPTION_KEY: 'only-31-bytes-of-key-material!!' }));
    expect(err.variables).toEqual(['ENCRYPTION_KEY']);
    expect(err.message).toBe(
      'Invalid configuration: ENCRYPTION_KEY must be at least 32 bytes (value hidden)',
    );
    expect(loadConfig({ ENCRYPTION_KEY: 'exactly-32-bytes-of-key-material' }).encryptionKey).toHaveLength(32);
  });

  it('refuses a TRACKING_SECRET shorter than 16 characters, without echoing it', () => {
    const err = errorOf(() => loadConfig({ TRACKING_SECRET: 'short-secret' }));
    expect(err.message).toBe(
      'Invalid configuration: TRACKING_SECRET must be at least 16 characters (value hidden)',
    );
  });

  it('refuses short secrets in production (issue 9, item 6)', () => {
    const err = errorOf(() =>
      loadConfig({
        NODE_ENV: 'production',
        JWT_SECRET: 'a',
        INGEST_TOKEN: 'b',
        TRACKING_SECRET: LONG,
        WEBHOOK_SECRETS_KEY: LONG,
        ENCRYPTION_KEY: LONG,
      }),
    );
    expect(err.variables).toEqual(['JWT_SECRET', 'INGEST_TOKEN']);
    expect(err.message).toBe(
      'Invalid configuration: JWT_SECRET and INGEST_TOKEN must be at least 32 bytes in production (value hidden); e.g. `openssl rand -base64 32`',
    );
    expect(err.message).not.toMatch(/\ba\b.*\bb\b/);
    const ok = loadConfig({
      NODE_ENV: 'production',
      JWT_SECRET: LONG,
      INGEST_TOKEN: LONG,
      TRACKING_SECRET: LONG,
      WEBHOOK_SECRETS_KEY: LONG,
      ENCRYPTION_KEY: LONG,
    });
    expect(ok.jwtSecret).toBe(LONG);
    // Outside production, a short dev secret is allowed.
    expect(loadConfig({ JWT_SECRET: 'a', INGEST_TOKEN: 'b' }).jwtSecret).toBe('a');
  });

  it('refuses two ways of verifying JWTs at once (issue 9, item 6)', () => {
    const err = errorOf(() =>
      loadConfig({
        JWT_SECRET: LONG,
        JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\\nAAAA\\n-----END PUBLIC KEY-----',
      }),
    );
    expect(err.variables).toEqual(['JWT_SECRET', 'JWT_PUBLIC_KEY']);
    expect(err.message).toMatch(/set only one of JWT_SECRET, JWT_PUBLIC_KEY/);
    expect(() => loadConfig({ JWT_SECRET: LONG, JWT_JWKS_URL: 'https://a.example/jwks' })).toThrow(
      ConfigError,
    );
  });

  it('checks SMTP_URL, PUBLIC_URL and TRACKING_SECRET, hiding the secret', () => {
    expect(errorOf(() => loadConfig({ SMTP_URL: 'http://relay' })).variables).toEqual(['SMTP_URL']);
    expect(errorOf(() => loadConfig({ PUBLIC_URL: 'ftp://x' })).variables).toEqual(['PUBLIC_URL']);
    const short = errorOf(() => loadConfig({ TRACKING_SECRET: 'short-secret' }));
    expect(short.message).toContain('TRACKING_SECRET must be at least 16 characters (value hidden)');
    expect(short.message).not.toContain('short-secret');
  });

  it('lets the caller choose whether secrets are required', () => {
    expect(() => loadConfig({}, { requireSecrets: true })).toThrow(ConfigError);
    expect(loadConfig({ NODE_ENV: 'production' }, { requireSecrets: false }).nodeEnv).toBe('production');
  });

  it('WEBHOOK_ALLOW_PRIVATE defaults to true, and to false with NODE_ENV=production (SPEC §2)', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).webhookAllowPrivate).toBe(true);
    const prod = {
      NODE_ENV: 'production',
      JWT_SECRET: LONG,
      INGEST_TOKEN: LONG,
      TRACKING_SECRET: 'tracking-secret-0123456789',
      WEBHOOK_SECRETS_KEY: 'webhook-secrets-key-0123456789',
      ENCRYPTION_KEY: LONG,
    };
    expect(loadConfig(prod).webhookAllowPrivate).toBe(false);
    expect(loadConfig({ ...prod, WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate).toBe(true);
    expect(errorOf(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'yes' })).message).toBe(
      'Invalid configuration: WEBHOOK_ALLOW_PRIVATE must be true or false (got "yes")',
    );
  });

  it('WEBHOOK_SECRETS_KEY needs 16 characters and is never echoed', () => {
    const err = errorOf(() => loadConfig({ WEBHOOK_SECRETS_KEY: 'short-secret' }));
    expect(err.message).toBe(
      'Invalid configuration: WEBHOOK_SECRETS_KEY must be at least 16 characters (value hidden)',
    );
  });

  it('METRICS_TOKEN needs 16 characters and is never echoed; OPEN_DEDUP_SECONDS is 0..86400', () => {
    expect(errorOf(() => loadConfig({ METRICS_TOKEN: 'short-token' })).message).toBe(
      'Invalid configuration: METRICS_TOKEN must be at least 16 characters (value hidden)',
    );
    expect(loadConfig({ OPEN_DEDUP_SECONDS: '0' }).openDedupSeconds).toBe(0);
    expect(errorOf(() => loadConfig({ OPEN_DEDUP_SECONDS: '86401' })).variables).toEqual([
      'OPEN_DEDUP_SECONDS',
    ]);
  });

  it('checks DNS_SERVERS, BOUNCE_SUBDOMAIN, BOUNCE_MX_HOST and SPF_INCLUDE (SPEC §20), naming each', () => {
    expect(errorOf(() => loadConfig({ DNS_SERVERS: 'dns.example.com:53' })).message).toBe(
      'Invalid configuration: DNS_SERVERS must be a comma list of ip:port (e.g. 127.0.0.1:5353; [::1]:53 for IPv6) (got "dns.example.com:53")',
    );
    expect(errorOf(() => loadConfig({ DNS_SERVERS: '127.0.0.1:99999' })).variables).toEqual(['DNS_SERVERS']);
    expect(errorOf(() => loadConfig({ BOUNCE_SUBDOMAIN: '-bad-' })).message).toBe(
      'Invalid configuration: BOUNCE_SUBDOMAIN must be a DNS label such as tern-bounces (got "-bad-")',
    );
    expect(errorOf(() => loadConfig({ BOUNCE_MX_HOST: 'localhost' })).message).toBe(
      'Invalid configuration: BOUNCE_MX_HOST must be a host name such as mx.example.com (got "localhost")',
    );
    expect(errorOf(() => loadConfig({ SPF_INCLUDE: 'spf include' })).variables).toEqual(['SPF_INCLUDE']);
    // SPEC §21: the bounce mailbox.
    expect(errorOf(() => loadConfig({ BOUNCE_SMTP_PORT: '70000' })).variables).toEqual(['BOUNCE_SMTP_PORT']);
    expect(errorOf(() => loadConfig({ BOUNCE_DOMAIN: 'localhost' })).variables).toEqual(['BOUNCE_DOMAIN']);
    expect(errorOf(() => loadConfig({ BOUNCE_SMTP_MAX_BYTES: '10' })).variables).toEqual([
      'BOUNCE_SMTP_MAX_BYTES',
    ]);
  });

  it('SMTP submission (SPEC §22): off unless SMTP_SUBMISSION_PORT; a TLS pair or none; no submission without TLS in production', () => {
    expect(loadConfig({}).smtpSubmissionPort).toBeUndefined();
    expect(loadConfig({ SMTP_SUBMISSION_PORT: '2587' }).smtpSubmissionPort).toBe(2587);
    expect(errorOf(() => loadConfig({ SMTP_SUBMISSION_PORT: '70000' })).variables).toEqual([
      'SMTP_SUBMISSION_PORT',
    ]);
    expect(errorOf(() => loadConfig({ SMTP_TLS_CERT: '/c.pem' })).message).toBe(
      'Invalid configuration: set both SMTP_TLS_CERT and SMTP_TLS_KEY, or neither',
    );
    const prod = {
      NODE_ENV: 'production',
      JWT_SECRET: LONG,
      INGEST_TOKEN: LONG,
      TRACKING_SECRET: 'tracking-secret-0123456789',
      WEBHOOK_SECRETS_KEY: 'webhook-secrets-key-0123456789',
      ENCRYPTION_KEY: LONG,
      SMTP_SUBMISSION_PORT: '587',
    };
    expect(errorOf(() => loadConfig(prod)).variables).toEqual(['SMTP_TLS_CERT', 'SMTP_TLS_KEY']);
    expect(loadConfig({ ...prod, SMTP_TLS_CERT: '/c.pem', SMTP_TLS_KEY: '/k.pem' }).smtpTlsKey).toBe(
      '/k.pem',
    );
  });

  it('reads TRUST_PROXY as Fastify takes it and SHUTDOWN_TIMEOUT_MS, naming each when wrong', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: 'FALSE' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '127.0.0.1' }).trustProxy).toEqual(['127.0.0.1']);
    for (const bad of ['proxy.example.com', '10.0.0.0/33', '::1/129', 'yes', ',']) {
      expect(errorOf(() => loadConfig({ TRUST_PROXY: bad })).variables).toEqual(['TRUST_PROXY']);
    }
    expect(errorOf(() => loadConfig({ SHUTDOWN_TIMEOUT_MS: '10' })).message).toBe(
      'Invalid configuration: SHUTDOWN_TIMEOUT_MS must be an integer 1000..600000 (got "10")',
    );
  });
});
