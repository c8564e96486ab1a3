import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { serveClusterMetrics } from './metrics.js';
import type { Service } from './services.js';

/**
 * Ingest on every core (issue 10): a process started with `--services=ingest` alone forks
 * `INGEST_WORKERS` workers (default: one per core) that share its port through node:cluster; each
 * is a whole ingest process (its own Kafka producer or Postgres pool). Ingest keeps no state
 * between requests, so any worker may take any request. Every other topology — the all-in-one
 * `npm start` included — stays one process: PGlite and chDB belong to one process.
 */
export function ingestWorkerCount(services: ReadonlySet<Service>, configured: number | undefined): number {
  if (services.size !== 1 || !services.has('ingest')) return 1;
  return configured ?? availableParallelism();
}

/** True in the process that should fork rather than serve. */
export const isClusterPrimary = (workers: number): boolean => workers > 1 && cluster.isPrimary;

/**
 * The primary: forks the workers and stays their supervisor. A worker that dies after it served
 * is replaced; a worker that dies before it ever listened is a start-up failure (bad
 * configuration, store unreachable), so the primary stops the others and exits with its code
 * instead of forking in a loop. SIGTERM/SIGINT are passed on; the primary exits once every
 * worker has (its code: 0, or 1 if a worker failed to stop cleanly).
 */
export function superviseIngestWorkers(
  workers: number,
  log: { info(obj: object, msg: string): void; error(obj: object, msg: string): void },
): void {
  let stopping = false;
  let exitCode = 0;
  const listened = new Set<number>();
  const alive = () =>
    Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, workers: alive().length }, 'stopping ingest workers');
    for (const worker of alive()) worker.process.kill(signal);
    if (alive().length === 0) process.exit(exitCode);
    // Each worker forces its own exit after 30 s; this is the backstop.
    setTimeout(() => {
      for (const worker of alive()) worker.process.kill('SIGKILL');
      process.exit(1);
    }, 35_000).unref();
  };

  cluster.on('listening', (worker) => {
    listened.add(worker.id);
    if (listened.size === workers) log.info({ workers }, 'ingest workers listening');
  });
  cluster.on('exit', (worker, code, signal) => {
    const clean = code === 0;
    if (!clean) exitCode = typeof code === 'number' && code !== 0 ? code : 1;
    if (stopping) {
      if (alive().length === 0) process.exit(exitCode);
      return;
    }
    if (!listened.has(worker.id)) {
      log.error({ worker: worker.id, code, signal }, 'an ingest worker failed to start; stopping');
      stop('SIGTERM');
      return;
    }
    log.error({ worker: worker.id, code, signal }, 'an ingest worker exited; starting another');
    cluster.fork();
  });
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // One scrape of /metrics, whichever worker takes it, sees every worker (issue 32).
  serveClusterMetrics();
  // The primary accepts connections and deals them out in turn (Node's default except on Windows;
  // set here so NODE_CLUSTER_SCHED_POLICY=none cannot leave it to the kernel, which favours one
  // worker under keep-alive).
  cluster.schedulingPolicy = cluster.SCHED_RR;
  for (let i = 0; i < workers; i++) cluster.fork();
}
