import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { type ClickHouseClient, type ClickHouseClientConfigOptions, createClient } from '@clickhouse/client';

// chDB loads its native engine (libchdb.so, ≈ 570 MB mapped) the moment `chdb/connection` is
// imported. Required only when a process opens the embedded engine: a process on a ClickHouse
// server, or one that needs no ClickHouse at all (ingest, sender, dispatcher), never maps it, and
// runs from an image built without it (Dockerfile, EMBEDDED_CLICKHOUSE=false).
const loadChdb = () =>
  (createRequire(import.meta.url)('chdb/connection') as typeof import('chdb/connection'))
    .createChdbConnection;

export type ClickHouseKind = 'server' | 'chdb';

export interface ClickHouseStore {
  /** The one way to reach ClickHouse, whichever kind. */
  client: ClickHouseClient;
  kind: ClickHouseKind;
  /** Releases this handle; the shared chDB engine closes with the last handle. Idempotent. */
  close(): Promise<void>;
}

export interface CreateClickHouseOptions {
  /** ClickHouse HTTP URL; unset → embedded chDB in `${dataDir}/chdb`. */
  clickhouseUrl?: string | undefined;
  dataDir: string;
  /** Database of a server (default: the URL's path, else `default`). chDB has only `default`. */
  database?: string;
}

export class ChdbPathConflictError extends Error {
  override readonly name = 'ChdbPathConflictError';
}

// chDB binds one data directory per process, so every handle on it shares one client; the
// engine is closed when the last handle closes.
let shared: { path: string; client: ClickHouseClient; refs: number } | undefined;

/**
 * Opens ClickHouse through `@clickhouse/client`: over HTTP to a server, or in-process with chDB
 * plugged in as the client's connection. Callers see the same client API either way.
 */
export function createClickHouse(opts: CreateClickHouseOptions): ClickHouseStore {
  if (opts.clickhouseUrl) {
    const client = createClient({
      url: opts.clickhouseUrl,
      ...(opts.database ? { database: opts.database } : {}),
    });
    return { client, kind: 'server', close: once(() => client.close()) };
  }

  if (opts.database && opts.database !== 'default') {
    throw new Error(
      `Embedded chDB serves only the "default" database (got "${opts.database}"); use a separate data directory instead`,
    );
  }
  const path = join(resolve(opts.dataDir), 'chdb');
  if (shared && shared.path !== path) {
    throw new ChdbPathConflictError(
      `chDB is already open on ${shared.path} in this process and binds one data directory per process; cannot also open ${path}`,
    );
  }
  if (!shared) {
    mkdirSync(path, { recursive: true });
    // chdb types its connection against @clickhouse/client-common 1.23.0, the client against its
    // own vendored copy of that contract; same shape at run time, ClickHouseSettings differ.
    const chdb = loadChdb()({ path }) as unknown as ClientConnection;
    const connection = new SettingsIsolatingConnection(chdb);
    shared = { path, client: createClient({ connection }), refs: 0 };
  }
  const entry = shared;
  entry.refs++;
  return {
    client: entry.client,
    kind: 'chdb',
    close: once(async () => {
      entry.refs--;
      if (entry.refs > 0) return;
      if (shared === entry) shared = undefined;
      await entry.client.close();
    }),
  };
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => {
    done ??= fn();
    return done;
  };
}

// The client's backend contract is deliberately not exported by @clickhouse/client; derive it.
type ClientConnection = NonNullable<ClickHouseClientConfigOptions['connection']>;
type Method = 'query' | 'exec' | 'command' | 'insert' | 'ping';
type Param<M extends Method> = Parameters<ClientConnection[M]>[0];
type Result<M extends Method> = ReturnType<ClientConnection[M]>;
type ClickHouseSettings = Param<'query'>['clickhouse_settings'];

// Settings chDB's connection handles itself instead of SETting them on the session.
const NOT_SESSION_SETTINGS = new Set([
  'default_format',
  'wait_end_of_query',
  'send_progress_in_http_headers',
  'http_response_buffer_size',
  'http_headers_progress_interval_ms',
  'http_send_progress_interval_ms',
  'enable_http_compression',
  'http_zlib_compression_level',
  'http_response_compression_method',
  'http_native_compression_disable_checksumming_on_decompress',
]);

/**
 * chdb/connection (3.4.0) applies a call's `clickhouse_settings` as `SET k = v; <query>` on its
 * long-lived session, so they stay in force for every later call: one insert with
 * `insert_deduplication_token` would silently deduplicate every following insert. Over HTTP a
 * setting lasts one request; this wrapper restores that: calls run one at a time, and after a
 * call with settings they are reset with `SET k = DEFAULT` before the next call starts.
 */
class SettingsIsolatingConnection implements ClientConnection {
  readonly #inner: ClientConnection;
  #tail: Promise<unknown> = Promise.resolve();

  constructor(inner: ClientConnection) {
    this.#inner = inner;
  }

  #serialized<T>(settings: ClickHouseSettings | undefined, fn: () => Promise<T>): Promise<T> {
    const keys = Object.entries(settings ?? {})
      .filter(([key, value]) => value !== undefined && !NOT_SESSION_SETTINGS.has(key))
      .map(([key]) => key);
    const run = async (): Promise<T> => {
      try {
        return await fn();
      } finally {
        for (const key of keys) {
          // A setting whose SET failed never took effect, so a failing reset is harmless.
          await this.#inner.command({ query: `SET ${key} = DEFAULT` }).catch(() => {});
        }
      }
    };
    const result = this.#tail.then(run, run);
    this.#tail = result.catch(() => {});
    return result;
  }

  query(params: Param<'query'>): Result<'query'> {
    return this.#serialized(params.clickhouse_settings, () => this.#inner.query(params));
  }
  exec(params: Param<'exec'>): Result<'exec'> {
    return this.#serialized(params.clickhouse_settings, () => this.#inner.exec(params));
  }
  command(params: Param<'command'>): Result<'command'> {
    return this.#serialized(params.clickhouse_settings, () => this.#inner.command(params));
  }
  insert(params: Param<'insert'>): Result<'insert'> {
    return this.#serialized(params.clickhouse_settings, () => this.#inner.insert(params));
  }
  ping(params: Param<'ping'>): Result<'ping'> {
    return this.#serialized(undefined, () => this.#inner.ping(params));
  }
  close(): Promise<void> {
    return this.#serialized(undefined, () => this.#inner.close());
  }
}
