import type { Config } from '@tern/config';
import type { Dispatcher } from '@tern/dispatcher';
import type { EventStream } from '@tern/event-log';
import type { ReadinessCheck } from '@tern/http';
import type { Keyring } from '@tern/privacy';
import type { Projector } from '@tern/projector';
import type { Sender } from '@tern/sender';
import type { KeySealer } from '@tern/sending-domains';
import type { ClickHouseStore, PostgresStore } from '@tern/stores';
import type { SecretBox } from '@tern/webhooks';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';
import type { Service } from './services.js';

export interface RuntimeSecrets {
  jwtSecret?: string | undefined;
  ingestToken?: string | undefined;
  trackingSecret?: string | undefined;
  /** Seals webhook secrets at rest; required by the api and the dispatcher. */
  webhookSecretsKey?: string | undefined;
  /** ENCRYPTION_KEY: wraps the data keys of personal fields in the event log (SPEC §14). */
  encryptionKey?: string | undefined;
  /** METRICS_TOKEN: bearer token of `GET /metrics`; unset in production → no `/metrics`. */
  metricsToken?: string | undefined;
}

/** Test and bench knobs of the sender (retry schedule, polling); production uses the defaults. */
export interface RuntimeOptions {
  sender?: { retryDelaysMs?: readonly number[]; pollIntervalMs?: number; leaseMs?: number };
  /** Test hook (NODE_ENV=test only, see main.ts): one component's close hangs. */
  shutdownHang?: ShutdownHang;
}

/** A component whose close never finishes (`promise`) or blocks the main thread on a futex (`block`). */
export interface ShutdownHang {
  component: string;
  mode: 'promise' | 'block';
}

/**
 * What every `start<Role>(ctx)` of `roles/` is handed: the configuration, the stores and the
 * stream this process opened, and where a role registers what it must close and check.
 */
export interface RuntimeContext {
  config: Config;
  services: ReadonlySet<Service>;
  secrets: RuntimeSecrets;
  options: RuntimeOptions;
  logger: Logger;
  metrics: Metrics;
  /** The base URL of the links this process writes (resolvePublicUrl). */
  publicUrl: string;
  pgStore: PostgresStore;
  pool: PostgresStore['pool'];
  /** ClickHouse, opened when the projector, the api or the worker runs here. */
  ch: ClickHouseStore['client'] | undefined;
  /** The typed, sealing stream over the event log every service reads and writes (docs/architecture.md). */
  stream: EventStream | undefined;
  keyring: Keyring;
  /** Seals webhook secrets at rest (api, dispatcher). */
  secretBox: SecretBox | undefined;
  /** Seals DKIM private keys (api generates them, the sender signs with them; SPEC §20). */
  dkimSealer: KeySealer | undefined;
  trackingSecret: string | undefined;
  /** SPEC §20: in production with a real provider, mail must come from a verified domain. */
  requireVerifiedDomains: boolean;
  /** Readiness checks of `/ready`. */
  readiness: ReadinessCheck[];
  /** Starts that go on after the server listens (the projector's group join). */
  background: Promise<void>[];
  /** Registers a component to close; the last registered closes first. */
  onClose(name: string, close: () => Promise<unknown>): void;
  /** Work the idle memory release must wait for (the projector's batches); set once it exists. */
  activity: () => void;
  /** The running services `/metrics` reads gauges of. */
  running: { projector?: Projector; sender?: Sender; dispatcher?: Dispatcher };
}

/** `ctx.stream`, which the runtime opens whenever a role that needs it runs. */
export function streamOf(ctx: RuntimeContext): EventStream {
  if (!ctx.stream) throw new Error('the event log is not open in this process');
  return ctx.stream;
}

/** What each optional capability of the context is, for the error when a role finds it missing. */
const CAPABILITIES = {
  ch: 'ClickHouse',
  secretBox: 'the webhook secrets box',
  dkimSealer: 'the DKIM key sealer',
  trackingSecret: 'the tracking secret',
} as const;

/**
 * A capability the runtime provides when a role that needs it runs here (`ctx.ch`, …): a role reads
 * each once at its start and passes the value on, typed as present; missing, it fails the start
 * with a sentence naming what is missing.
 */
export function capability<K extends keyof typeof CAPABILITIES>(
  ctx: RuntimeContext,
  key: K,
): NonNullable<RuntimeContext[K]> {
  const value = ctx[key];
  if (value === undefined || value === null)
    throw new Error(`${CAPABILITIES[key]} is not open in this process`);
  return value as NonNullable<RuntimeContext[K]>;
}
