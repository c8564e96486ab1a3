/**
 * Load from outside the server under test (issue 29): every helper here runs in a process of its
 * own, so neither the load nor the ceiling shares the event loop of the api it measures.
 *   - `load`: autocannon at N connections (req/s, p99 in whole ms);
 *   - `probe`: sequential keep-alive requests at one connection (p50/p99 in µs resolution);
 *   - `startCeiling`: a bare Fastify route per body, answering the SAME bytes as a ready string;
 *   - `startWriter`: posts delivery events of new emails of one tenant to `POST /events` at a
 *     bounded rate until stopped, then reports what was accepted.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const require = createRequire(import.meta.url);
const autocannonBin = require.resolve('autocannon/autocannon.js');
const fastifyPath = require.resolve('fastify');

export interface LoadResult {
  reqPerSec: number;
  p99: number;
  failed: number;
  total: number;
  /**
   * CPU time of the server's main thread (`pid`: the JavaScript thread, not chDB's or GC's) per
   * request answered, µs (10 ms ticks from /proc): what a request costs, whatever else the shared
   * machine runs meanwhile.
   */
  serverCpuUs: number;
}

/** user + system CPU of a process's main thread so far, ms (Linux /proc; NaN elsewhere). */
export function mainThreadCpuMs(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** autocannon (its own process) at `connections` for `seconds`, after one uncounted second (JIT) unless `warmup: false`. */
export async function load(
  url: string,
  opts: {
    connections: number;
    seconds: number;
    headers?: Record<string, string>;
    warmup?: boolean;
    pid?: number;
    /** The server's CPU so far, ms, instead of its main thread's (`pid`): e.g. a whole process's. */
    serverCpuMs?: () => number;
  },
): Promise<LoadResult> {
  const run = (seconds: number) => {
    const args = [autocannonBin, '-j', '-c', String(opts.connections), '-d', String(seconds)];
    for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}=${v}`);
    args.push(url);
    return execFileAsync(process.execPath, args, { maxBuffer: 16 * 2 ** 20 });
  };
  const serverCpuMs = opts.serverCpuMs ?? (() => mainThreadCpuMs(opts.pid));
  if (opts.warmup !== false) await run(1);
  const cpuBefore = serverCpuMs();
  const { stdout } = await run(opts.seconds);
  const cpuMs = serverCpuMs() - cpuBefore;
  const r = JSON.parse(stdout) as {
    requests: { average: number; total: number };
    latency: { p99: number };
    non2xx: number;
    errors: number;
  };
  return {
    reqPerSec: r.requests.average,
    p99: r.latency.p99,
    failed: r.non2xx + r.errors,
    total: r.requests.total,
    serverCpuUs: (cpuMs * 1000) / Math.max(1, r.requests.total),
  };
}

export interface ProbeResult {
  p50: number;
  p99: number;
  n: number;
}

/**
 * Sequential keep-alive requests at one connection (its own process), ms with µs resolution: for
 * `seconds`, and at least `minRequests` (a slow server still gets a p99), at most 10 s more.
 */
export async function probe(
  url: string,
  headers: Record<string, string>,
  seconds: number,
  minRequests = 100,
): Promise<ProbeResult> {
  const script = `const [url, h, seconds, min] = process.argv.slice(1);
const headers = JSON.parse(h); const out = []; const start = performance.now();
const end = start + Number(seconds) * 1000; const cap = end + 10000;
for (let i = 0; i < 5; i++) await (await fetch(url, { headers })).arrayBuffer();
while ((performance.now() < end || out.length < Number(min)) && performance.now() < cap) {
  const t = performance.now(); const r = await fetch(url, { headers }); await r.arrayBuffer();
  if (r.status !== 200) throw new Error('status ' + r.status);
  out.push(performance.now() - t);
}
out.sort((a, b) => a - b);
const at = (q) => out[Math.min(out.length - 1, Math.floor(out.length * q))];
process.stdout.write(JSON.stringify({ p50: at(0.5), p99: at(0.99), n: out.length }));`;
  const { stdout } = await execFileAsync(process.execPath, [
    '-e',
    script,
    url,
    JSON.stringify(headers),
    String(seconds),
    String(minRequests),
  ]);
  return JSON.parse(stdout) as ProbeResult;
}

export interface Ceiling {
  /** `${url}/${name}` answers `bodies[name]`. */
  url: string;
  pid: number | undefined;
  close(): Promise<void>;
}

/**
 * The ceiling: a bare Fastify app (no logger, no hooks) in its own process, one route per body,
 * each answering its bytes as a ready string (or, with `buffers`, a Buffer encoded once: what a
 * route answering a kept buffer sends) with the api's content type — what any Fastify server costs
 * to send that answer, with nothing computed per request.
 */
export async function startCeiling(
  bodies: Record<string, string>,
  opts: { buffers?: boolean } = {},
): Promise<Ceiling> {
  // Through a file: a body of hundreds of kB is more than one argument may hold (E2BIG).
  const dir = mkdtempSync(join(tmpdir(), 'tern-bench-ceiling-'));
  const file = join(dir, 'bodies.json');
  writeFileSync(file, JSON.stringify(bodies));
  const script = `const Fastify = require(process.argv[1]);
const bodies = JSON.parse(require('node:fs').readFileSync(process.argv[2], 'utf8'));
const app = Fastify({ logger: false });
for (const [name, text] of Object.entries(bodies)) {
  const body = process.argv[3] === 'buffers' ? Buffer.from(text) : text;
  app.get('/' + name, (_req, reply) => { reply.type('application/json; charset=utf-8').send(body); });
}
app.listen({ host: '127.0.0.1', port: 0 }).then(() => process.stdout.write(String(app.server.address().port) + '\\n'));`;
  const child = spawn(
    process.execPath,
    ['-e', script, fastifyPath, file, opts.buffers ? 'buffers' : 'strings'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    const port = await firstLine(child, 30_000);
    return { url: `http://127.0.0.1:${port}`, pid: child.pid, close: () => stop(child) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface WriterReport {
  acceptedEvents: number;
  requests: number;
  seconds: number;
  eventsPerSec: number;
  failed: number;
  firstError?: string;
}

export interface Writer {
  /** Stops posting; resolves once the requests in flight answered. */
  stop(): Promise<WriterReport>;
}

/**
 * Posts the events of new emails of `tenantId` (queued, sent, delivered: 3 per email, occurredAt
 * now, so each batch lands on page 1) to `POST /events`, `batch` events a request, paced to
 * `eventsPerSec` (at most 4 requests in flight: a slow server gets fewer, never a backlog).
 */
export async function startWriter(opts: {
  url: string;
  ingestToken: string;
  tenantId: string;
  eventsPerSec: number;
  batch: number;
  tag: string;
}): Promise<Writer> {
  const script = `const o = JSON.parse(process.argv[1]);
const headers = { 'content-type': 'application/json', authorization: 'Bearer ' + o.ingestToken };
const perEmail = 3; const emailsPerBatch = Math.max(1, Math.round(o.batch / perEmail));
const intervalMs = (emailsPerBatch * perEmail * 1000) / o.eventsPerSec;
let n = 0, accepted = 0, requests = 0, failed = 0, inFlight = 0, stopping = false, firstError;
const started = performance.now();
function body() {
  const events = []; const at = new Date().toISOString();
  for (let i = 0; i < emailsPerBatch; i++, n++) {
    const emailId = 'em_w' + o.tag + '_' + n; const base = { tenantId: o.tenantId, emailId, occurredAt: at };
    events.push({ ...base, id: emailId + '.q', type: 'email.queued', data: { toEmail: 'writer' + n + '@example.com', subject: 'Order #' + n, tags: ['receipt'] } });
    events.push({ ...base, id: emailId + '.s', type: 'email.sent', data: { provider: 'ses', messageId: 'w-' + n } });
    events.push({ ...base, id: emailId + '.d', type: 'email.delivered', data: {} });
  }
  return { text: JSON.stringify({ events }), count: events.length };
}
async function post() {
  const b = body(); inFlight++; requests++;
  try {
    const res = await fetch(o.url + '/events', { method: 'POST', headers, body: b.text });
    const text = await res.text();
    if (res.status === 202) accepted += b.count; else { failed++; firstError ??= res.status + ' ' + text.slice(0, 200); }
  } catch (e) { failed++; firstError ??= String(e); } finally { inFlight--; }
}
function report(seconds) {
  return { acceptedEvents: accepted, requests, seconds, eventsPerSec: accepted / seconds, failed, firstError };
}
${PACED_POSTS}`;
  return spawnWriter<WriterReport>(script, opts);
}

/**
 * The end of a writer's script (the `-e` source of its process), after its `post()` (one request,
 * counting `inFlight`) and its `report(seconds)`: posts paced to `intervalMs` (0: unpaced), never
 * more than 4 in flight nor a burst after a stall; `ready` once started; on SIGTERM, once the
 * requests in flight answered, `report(seconds)` as one line of JSON.
 */
export const PACED_POSTS = `let next = performance.now();
const timer = setInterval(() => {
  const now = performance.now();
  if (intervalMs === 0) { while (!stopping && inFlight < 4) void post(); return; }
  while (!stopping && next <= now && inFlight < 4) { next += intervalMs; void post(); }
  if (next < now - 1000) next = now; // never a burst to catch up after a stall
}, 5);
process.stdout.write('ready\\n');
process.on('SIGTERM', async () => {
  stopping = true; clearInterval(timer);
  const seconds = (performance.now() - started) / 1000;
  while (inFlight > 0) await new Promise((r) => setTimeout(r, 5));
  process.stdout.write(JSON.stringify(report(seconds)) + '\\n');
  process.exit(0);
});`;

/** Starts a writer's script (ending in `PACED_POSTS`) with `opts`; resolves once it posts; `stop()` ends it and resolves to its report. */
export async function spawnWriter<Report>(
  script: string,
  opts: unknown,
): Promise<{ stop(): Promise<Report> }> {
  const child = spawn(process.execPath, ['-e', script, JSON.stringify(opts)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await nextLine(child, 30_000);
  return {
    async stop() {
      const report = nextLine(child, 60_000);
      child.kill('SIGTERM');
      return JSON.parse(await report) as Report;
    },
  };
}

/** The next line `child` writes to its stdout (without its newline); rejects after `timeoutMs` or on its exit. */
export function nextLine(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error('child process: no answer in time')), timeoutMs);
    const onData = (d: Buffer) => {
      buffered += d.toString('utf8');
      const nl = buffered.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.off('exit', onExit);
        resolve(buffered.slice(0, nl));
      }
    };
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`child process exited (${code}) before answering`));
    };
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}

const firstLine = nextLine;

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
