/**
 * The built all-in-one process (`npm start`: `services/tern/dist/main.js`, or another build of it)
 * as a child process of a bench, its log lines in a file.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { signDashboardToken } from '@tern/auth';
import { pollUntil } from './services.js';

/** `n` random bytes, base64url: a secret of one run. */
export const randomSecret = (n: number): string => randomBytes(n).toString('base64url');

/** The secrets a production `tern` requires, fresh for one run; JWT_SECRET the given one, else fresh too. */
export const freshSecrets = (jwtSecret = randomSecret(32)) => ({
  JWT_SECRET: jwtSecret,
  INGEST_TOKEN: randomSecret(32),
  TRACKING_SECRET: randomSecret(24),
  WEBHOOK_SECRETS_KEY: randomSecret(24),
  ENCRYPTION_KEY: randomSecret(32),
});

/**
 * The environment of a production `tern` child on loopback: the database, fresh secrets, the rate
 * limit on (as configured by default) but never refusing a bench's own load (≤ 1 000 000 a minute),
 * and the Kafka log when `kafka` is given (else the table log).
 */
export function productionEnv(
  databaseUrl: string,
  kafka?: { brokers: string[]; topic: string },
): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    ...freshSecrets(),
    RATE_LIMIT_PER_MINUTE: '1000000',
    ...(kafka ? { KAFKA_BROKERS: kafka.brokers.join(','), KAFKA_TOPIC: kafka.topic } : {}),
  };
}

/** A dashboard session of the tenant's owner for an hour, signed with the process's JWT_SECRET. */
export const ownerJwt = (secret: string, tenantId: string): string =>
  signDashboardToken({ secret, tenantId, role: 'owner', expiresInSeconds: 3600 });

/** An API key of the tenant with `scopes`, created through the running api at `url` by its owner (`jwt`). */
export async function createApiKey(
  url: string,
  jwt: string,
  tenantId: string,
  name: string,
  scopes: string[],
): Promise<string> {
  const res = await fetch(`${url}/tenants/${tenantId}/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, scopes }),
  });
  if (res.status !== 201) throw new Error(`POST api-keys: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { key: string }).key;
}

export interface TernProcess {
  child: ChildProcess;
  url: string;
  logFile: string;
  /** SIGTERM, then SIGKILL after 30 s; resolves once it exited. */
  stop(): Promise<void>;
}

/** Starts `main` with `env` (its stdout, the log lines, into `logFile`); resolves once `/ready`. */
export async function startTern(opts: {
  main: string;
  env: Record<string, string>;
  port: number;
  logFile: string;
  nodeFlags?: string[];
  /** Arguments after `main`, e.g. `--services=api`. */
  args?: string[];
}): Promise<TernProcess> {
  const url = `http://127.0.0.1:${opts.port}`;
  const out = openSync(opts.logFile, 'w');
  const child = spawn(process.execPath, [...(opts.nodeFlags ?? []), opts.main, ...(opts.args ?? [])], {
    env: { ...opts.env, PORT: String(opts.port), PUBLIC_URL: url },
    stdio: ['ignore', out, 'inherit'],
  });
  closeSync(out);
  const ready = await pollUntil(
    async () => child.exitCode !== null || (await fetch(`${url}/ready`).catch(() => undefined))?.ok === true,
    { timeoutMs: 120_000, intervalMs: 200 },
  );
  if (!ready || child.exitCode !== null) {
    child.kill('SIGKILL');
    throw new Error(`${opts.main} not ready after 120 s (exit ${child.exitCode}); its log: ${opts.logFile}`);
  }
  return {
    child,
    url,
    logFile: opts.logFile,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        child.once('exit', () => {
          clearTimeout(timer);
          done();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** Warnings and errors of a log file (pino level ≥ 40), counted by message. */
export function logWarnings(file: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes('"level":4') && !line.includes('"level":5')) continue;
    try {
      const msg = String((JSON.parse(line) as { msg?: string }).msg);
      out[msg] = (out[msg] ?? 0) + 1;
    } catch {
      // a partial line
    }
  }
  return out;
}

/** Request log lines (one `request completed` per request) in a log file. */
export function requestLogLines(file: string): number {
  let n = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) if (line.includes('"reqId"')) n++;
  return n;
}

/** What a bench reports of the api's log file: its request log lines and its warnings by message. */
export const apiLogDetails = (file: string) => ({
  requestLogLines: requestLogLines(file),
  apiWarnings: logWarnings(file),
});

/**
 * `entries` log entries of one tenant over the last 30 days, written with SQL as the projector
 * would leave them (rows and their counters), then analysed.
 */
export async function fillLogs(
  pool: { query(sql: string, params?: unknown[]): Promise<unknown> },
  tenantId: string,
  entries: number,
): Promise<void> {
  await pool.query(
    `INSERT INTO email_logs (tenant_id, id, to_email, subject, status, provider, message_id, template_id,
                             tags, created_at, state, version)
     SELECT $1, 'em_' || g, 'user' || (g % 5000) || '@example.com', 'Your receipt',
            (ARRAY['DELIVERED','DELIVERED','DELIVERED','SENT','BOUNCED','FAILED','QUEUED','DELIVERED'])[1 + g % 8],
            'ses', 'msg-' || g, 'tpl_' || (g % 20), '["receipt"]'::jsonb,
            to_timestamp(($2::bigint - g * $3::float8) / 1000.0),
            jsonb_build_object('openCount', g % 3, 'clickCount', (g % 7 = 0)::int, 'complaintCount', 0), 1
       FROM generate_series(1, $4::bigint) AS g`,
    [tenantId, Date.now() - 60_000, (30 * 86_400_000) / entries, entries],
  );
  await pool.query(
    `INSERT INTO email_log_counts (tenant_id, project_id, day, status, n)
     SELECT tenant_id, '', (created_at AT TIME ZONE 'UTC')::date, status, count(*) FROM email_logs
      WHERE tenant_id = $1 GROUP BY 1, 3, 4`,
    [tenantId],
  );
  await pool.query(
    `INSERT INTO email_log_hour_counts (tenant_id, project_id, hour, status, n)
     SELECT tenant_id, '', date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', status, count(*)
       FROM email_logs WHERE tenant_id = $1 GROUP BY 1, 3, 4`,
    [tenantId],
  );
  await pool.query('VACUUM ANALYZE email_logs');
}

/**
 * The runner SIGKILLs a bench past its bound, which would leave a Tern child running: this
 * process kills its child itself and exits first (BENCH_TIMEOUT_SECONDS less 20 s, else
 * `defaultSeconds` less 20 s). `watch` names the child to kill.
 */
export function boundBench(
  bench: string,
  defaultSeconds: number,
): { watch(child: { kill(signal: NodeJS.Signals): boolean }): void } {
  const boundMs = (Number(process.env.BENCH_TIMEOUT_SECONDS) || defaultSeconds) * 1000 - 20_000;
  let running: { kill(signal: NodeJS.Signals): boolean } | undefined;
  setTimeout(() => {
    console.error(`[${bench}] not done within ${boundMs / 1000} s: stopping the Tern child`);
    running?.kill('SIGKILL');
    process.exit(1);
  }, boundMs).unref();
  return {
    watch(child) {
      running = child;
    },
  };
}
