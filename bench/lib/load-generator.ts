/**
 * The ingest load generator, run as its own process so that building and sending requests does
 * not share the event loop (or the core) of the server under test.
 *   node --import tsx bench/lib/load-generator.ts '<json LoadOptions>'
 * Prints one JSON line (LoadReport) on stdout when done.
 */
import { chunks, generateTraffic } from './events.js';

export interface LoadOptions {
  /** Servers to load; connection i goes to urls[i % urls.length]. */
  urls: string[];
  token: string;
  /** Events sent in all (stops earlier at `maxSeconds`). */
  events: number;
  batchSize: number;
  /** Requests in flight at once (= connections, fetch keeps them alive). */
  concurrency: number;
  maxSeconds: number;
  /** Requests sent first and not counted: connections, JIT, topic metadata. */
  warmupRequests: number;
  tag: string;
  endMs: number;
}

export interface LoadReport {
  requests: number;
  acceptedEvents: number;
  elapsedMs: number;
  /** Per counted request, ms from send to the end of the response body. */
  latenciesMs: number[];
  statuses: Record<string, number>;
  firstError?: string;
}

async function run(opts: LoadOptions): Promise<LoadReport> {
  const warmEvents = opts.warmupRequests * opts.batchSize;
  const traffic = generateTraffic({ events: opts.events + warmEvents, tag: opts.tag, endMs: opts.endMs });
  // Bodies are serialised up front: the generator must cost as little as possible while it runs.
  const bodies = chunks(traffic, opts.batchSize).map((events) => JSON.stringify({ events }));
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${opts.token}` };
  const statuses: Record<string, number> = {};
  let firstError: string | undefined;

  async function send(body: string, url: string): Promise<{ ok: boolean; accepted: number }> {
    try {
      const res = await fetch(url, { method: 'POST', headers, body });
      const text = await res.text();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status !== 202) {
        firstError ??= `${res.status} ${text.slice(0, 300)}`;
        return { ok: false, accepted: 0 };
      }
      return { ok: true, accepted: (JSON.parse(text) as { accepted: number }).accepted };
    } catch (error) {
      statuses.error = (statuses.error ?? 0) + 1;
      firstError ??= String(error);
      return { ok: false, accepted: 0 };
    }
  }

  const warm = bodies.slice(0, opts.warmupRequests);
  await Promise.all(warm.map((b, i) => send(b, opts.urls[i % opts.urls.length]!)));
  for (const k of Object.keys(statuses)) delete statuses[k];

  const measured = bodies.slice(opts.warmupRequests);
  const latenciesMs: number[] = [];
  let next = 0;
  let acceptedEvents = 0;
  // The parent starts its CPU accounting on this line.
  process.stdout.write(`${JSON.stringify({ phase: 'measuring' })}\n`);
  const started = performance.now();
  const deadline = started + opts.maxSeconds * 1000;
  async function worker(url: string): Promise<void> {
    while (next < measured.length && performance.now() < deadline) {
      const body = measured[next++]!;
      const t = performance.now();
      const r = await send(body, url);
      latenciesMs.push(performance.now() - t);
      acceptedEvents += r.accepted;
    }
  }
  await Promise.all(
    Array.from({ length: opts.concurrency }, (_, i) => worker(opts.urls[i % opts.urls.length]!)),
  );
  const elapsedMs = performance.now() - started;
  return {
    requests: latenciesMs.length,
    acceptedEvents,
    elapsedMs,
    latenciesMs,
    statuses,
    ...(firstError ? { firstError } : {}),
  };
}

const arg = process.argv[2];
if (!arg) throw new Error('usage: load-generator.ts <json options>');
const report = await run(JSON.parse(arg) as LoadOptions);
process.stdout.write(`${JSON.stringify(report)}\n`);
