import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kafkajs } from '@tern/event-log';
import { createNamedDatabase } from '../../test/support/services.js';

const { Kafka, logLevel } = kafkajs();

/** Where the real services are; read once by each bench's entry point. */
export interface BenchEnv {
  kafkaBrokers: string[];
  /** Admin connection: fresh databases are created and dropped through it. */
  databaseUrl: string;
}

export function benchEnv(env: NodeJS.ProcessEnv): BenchEnv {
  return {
    kafkaBrokers: (env.KAFKA_BROKERS ?? '127.0.0.1:9092')
      .split(',')
      .map((b) => b.trim())
      .filter((b) => b.length > 0),
    databaseUrl: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  };
}

/** Whether the bench was started with `--quick` (`npm run bench -- <name> --quick`): a smaller run. */
export const quick = process.argv.includes('--quick');

/** A short random tag, so topics, groups, databases and tenants of concurrent runs never meet. */
export const runTag = (): string => `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;

export interface FreshDatabase {
  url: string;
  drop(): Promise<void>;
}

/** An empty database on the server of `adminUrl`, named `tern_bench_*`; `drop()` removes it. */
export function createFreshDatabase(adminUrl: string): Promise<FreshDatabase> {
  return createNamedDatabase(adminUrl, `tern_bench_${runTag()}`);
}

/** Deletes a bench topic and the consumer groups that read it (best effort). */
export async function deleteTopic(brokers: string[], topic: string, groups: string[] = []): Promise<void> {
  const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    if (groups.length > 0) await admin.deleteGroups(groups).catch(() => {});
    await admin.deleteTopics({ topics: [topic], timeout: 10_000 }).catch(() => {});
  } catch {
    // A leftover bench topic is harmless; never fail a bench on cleanup.
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/** A new temp directory, removed by `remove()` and in any case when the process exits. */
export function tempDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  const remove = () => rmSync(path, { recursive: true, force: true });
  process.once('exit', remove);
  return { path, remove };
}

/** Polls `check` every `intervalMs` until it returns true or `timeoutMs` passes; returns whether it did. */
export async function pollUntil(
  check: () => Promise<boolean>,
  opts: { intervalMs: number; timeoutMs: number },
): Promise<boolean> {
  const deadline = performance.now() + opts.timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (performance.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, opts.intervalMs));
  }
}

/** A loopback port free now (the OS's pick, released at once): for a child process to listen on. */
export async function freePort(): Promise<number> {
  return new Promise((r) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => r(typeof a === 'object' && a ? a.port : 0));
    });
  });
}
