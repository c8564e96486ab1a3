/**
 * Load of the event stream bench (`benches/events.ts`, issue 42), each part in a process of its
 * own so that neither shares the event loop of the server it measures:
 *   - `startEventWriter`: posts delivery events of new emails to `POST /events`, one tenant per
 *     request in turn, paced to a rate (or as fast as 4 requests in flight allow); every event
 *     carries the wall-clock time of its POST in its subject (`t=<ms>`), which the stream repeats;
 *   - `startStreamClients`: opens SSE streams (`GET /events/stream`, plain `node:http`, one socket
 *     each) and measures, per message, the time from its POST to its arrival here.
 */
import { spawn } from 'node:child_process';
import { nextLine, PACED_POSTS, spawnWriter, type WriterReport } from './outside-load.js';

export interface EventWriterReport extends WriterReport {
  /** Time of a POST until its 202, ms. */
  postP50: number;
  postP99: number;
}

/**
 * `eventsPerSec` 0: unpaced (the most the ingest route accepts with 4 requests in flight).
 * Each request is `batch` events (3 per email: queued, sent, delivered) of the next tenant.
 */
export async function startEventWriter(opts: {
  url: string;
  ingestToken: string;
  tenants: string[];
  eventsPerSec: number;
  batch: number;
  tag: string;
}): Promise<{ stop(): Promise<EventWriterReport> }> {
  const script = `const o = JSON.parse(process.argv[1]);
const headers = { 'content-type': 'application/json', authorization: 'Bearer ' + o.ingestToken };
const emailsPerBatch = Math.max(1, Math.round(o.batch / 3));
const intervalMs = o.eventsPerSec > 0 ? (emailsPerBatch * 3 * 1000) / o.eventsPerSec : 0;
let n = 0, t = 0, accepted = 0, requests = 0, failed = 0, inFlight = 0, stopping = false, firstError;
const posts = [];
const started = performance.now();
function body() {
  const tenantId = o.tenants[t++ % o.tenants.length];
  const sentAt = Date.now(); const at = new Date(sentAt).toISOString(); const events = [];
  for (let i = 0; i < emailsPerBatch; i++, n++) {
    const emailId = 'em_s' + o.tag + '_' + n; const base = { tenantId, emailId, occurredAt: at };
    events.push({ ...base, id: emailId + '.q', type: 'email.queued', data: { toEmail: 'r' + n + '@example.com', subject: 't=' + sentAt, tags: ['bench'] } });
    events.push({ ...base, id: emailId + '.s', type: 'email.sent', data: { provider: 'ses', messageId: 's-' + n } });
    events.push({ ...base, id: emailId + '.d', type: 'email.delivered', data: {} });
  }
  return { text: JSON.stringify({ events }), count: events.length };
}
async function post() {
  const b = body(); inFlight++; requests++; const t0 = performance.now();
  try {
    const res = await fetch(o.url + '/events', { method: 'POST', headers, body: b.text });
    const text = await res.text();
    if (res.status === 202) { accepted += b.count; posts.push(performance.now() - t0); }
    else { failed++; firstError ??= res.status + ' ' + text.slice(0, 200); }
  } catch (e) { failed++; firstError ??= String(e); } finally { inFlight--; }
}
function report(seconds) {
  posts.sort((a, b) => a - b);
  const at = (q) => posts.length === 0 ? NaN : posts[Math.min(posts.length - 1, Math.ceil(q * posts.length) - 1)];
  return { acceptedEvents: accepted, requests, seconds, eventsPerSec: accepted / seconds,
    failed, firstError, postP50: at(0.5), postP99: at(0.99) };
}
${PACED_POSTS}`;
  return spawnWriter<EventWriterReport>(script, opts);
}

export interface StreamReport {
  /** Streams open (200 and not ended) at the report. */
  open: number;
  /** Messages received since the last report, and how many carried a `t=` subject. */
  messages: number;
  timed: number;
  /** Time from the POST to the arrival here, ms. */
  p50: number;
  p99: number;
  max: number;
  /** The highest latency of the messages that arrived in each second since the reset, ms. */
  maxPerSecond: number[];
  /** Refused or cut streams since the start, and the first reason. */
  errors: number;
  firstError?: string;
}

export interface StreamClients {
  /** Zeroes the counters (the start of a measured phase). */
  reset(): Promise<void>;
  /** The figures since the last reset. */
  report(): Promise<StreamReport>;
  close(): Promise<void>;
}

/**
 * SSE streams in one process: `streams[i]` is opened with its key after its cursor. Resolves once
 * every stream answered its headers (or failed: counted in `errors`).
 */
export async function startStreamClients(opts: {
  url: string;
  streams: { key: string; after: string }[];
}): Promise<StreamClients> {
  const script = `const http = require('node:http');
const o = JSON.parse(process.argv[1]); const u = new URL(o.url);
let open = 0, messages = 0, timed = 0, errors = 0, firstError, lat = [], perSecond = [], since = Date.now();
const reqs = [];
function fail(e) { errors++; firstError ??= String(e); }
function start(s) {
  return new Promise((resolve) => {
    const req = http.get({ host: u.hostname, port: u.port, path: '/events/stream?after=' + s.after, agent: false,
      headers: { authorization: 'Bearer ' + s.key, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) { fail('status ' + res.statusCode); res.resume(); return resolve(); }
      open++; resolve();
      res.setEncoding('utf8'); let buf = '';
      res.on('data', (chunk) => {
        buf += chunk; const now = Date.now(); let end;
        while ((end = buf.indexOf('\\n\\n')) >= 0) {
          const block = buf.slice(0, end); buf = buf.slice(end + 2);
          if (!block.includes('data:')) continue;
          messages++;
          const m = /"subject": ?"t=(\\d+)"/.exec(block); // jsonb text: '"subject": "t=…"'
          if (m) { timed++; const l = now - Number(m[1]); lat.push(l); const sec = Math.floor((now - since) / 1000); perSecond[sec] = Math.max(perSecond[sec] ?? 0, l); }
        }
      });
      res.on('end', () => { open--; fail('stream ended'); });
      res.on('error', (e) => fail(e));
    });
    req.on('error', (e) => { fail(e); resolve(); });
    reqs.push(req);
  });
}
(async () => {
  // 50 at a time: a burst of 1 000 connects is a test of the accept queue, not of the stream.
  for (let i = 0; i < o.streams.length; i += 50) await Promise.all(o.streams.slice(i, i + 50).map(start));
  process.stdout.write('ready\\n');
})();
let line = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  line += d; let nl;
  while ((nl = line.indexOf('\\n')) >= 0) {
    const cmd = line.slice(0, nl); line = line.slice(nl + 1);
    if (cmd === 'reset') { messages = 0; timed = 0; lat = []; perSecond = []; since = Date.now(); process.stdout.write('ok\\n'); }
    if (cmd === 'report') {
      lat.sort((a, b) => a - b);
      const at = (q) => lat.length === 0 ? NaN : lat[Math.min(lat.length - 1, Math.ceil(q * lat.length) - 1)];
      process.stdout.write(JSON.stringify({ open, messages, timed, p50: at(0.5), p99: at(0.99), max: lat.at(-1) ?? NaN, maxPerSecond: Array.from(perSecond, (x) => x ?? 0), errors, firstError }) + '\\n');
    }
    if (cmd === 'close') { for (const r of reqs) r.destroy(); process.stdout.write('closed\\n'); process.exit(0); }
  }
});`;
  const child = spawn(process.execPath, ['-e', script, JSON.stringify(opts)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  await nextLine(child, 120_000);
  const ask = (cmd: string) => {
    const answer = nextLine(child, 60_000);
    child.stdin?.write(`${cmd}\n`);
    return answer;
  };
  return {
    reset: async () => {
      await ask('reset');
    },
    report: async () => JSON.parse(await ask('report')) as StreamReport,
    close: async () => {
      await ask('close').catch(() => undefined);
    },
  };
}
