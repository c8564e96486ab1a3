import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { RawEvent } from '../faults/stream.js';
import type { SmtpSink } from '../support/smtp-sink.js';

/**
 * The cluster suite's traffic and what it measures: ingest at a set rate (`POST /events`, the
 * fault suite's oracle stream), sends through the api (`POST /emails/batch`), a webhook receiver
 * counting deliveries by webhook-id, and unavailability windows: from the first 503 (or refused
 * connection) to the next 202 of the same client.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Unavailability windows of one client: opened by a failure, closed by the next success. */
export class Availability {
  /**
   * @param refusedIsDocumented a refused connection counts as the documented unavailability
   *   (a process replaced on the same port, no balancer in front); behind a balancer it does not.
   */
  constructor(private readonly refusedIsDocumented = true) {}
  private downSince: number | undefined;
  readonly windows: { from: number; ms: number }[] = [];
  readonly statuses: Record<string, number> = {};
  /** Answers that are neither 2xx nor 503 with Retry-After (a client error beyond the documented one). */
  readonly unexpected: string[] = [];

  ok(status: number): void {
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
    if (this.downSince !== undefined) {
      this.windows.push({ from: this.downSince, ms: Date.now() - this.downSince });
      this.downSince = undefined;
    }
  }
  failed(what: string, documented: boolean): void {
    this.statuses[what] = (this.statuses[what] ?? 0) + 1;
    this.downSince ??= Date.now();
    if (!documented && this.unexpected.length < 20) this.unexpected.push(what);
  }
  get refusedDocumented(): boolean {
    return this.refusedIsDocumented;
  }
  /** The longest window that started at or after `since` (ms), 0 when none. */
  longest(since = 0, until = Number.POSITIVE_INFINITY): number {
    const open = this.downSince !== undefined && this.downSince >= since ? Date.now() - this.downSince : 0;
    return Math.max(
      open,
      0,
      ...this.windows.filter((w) => w.from >= since && w.from <= until).map((w) => w.ms),
    );
  }
}

/** One POST until a 2xx; 503 + Retry-After and refused connections are retried after 250 ms. */
async function postUntilAccepted(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  availability: Availability,
  deadline: number,
): Promise<unknown> {
  for (;;) {
    if (Date.now() > deadline) throw new Error(`${url}: not accepted before the deadline`);
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      // A process being replaced (rolling restart) refuses connections for a moment.
      const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
      availability.failed(
        `connection:${(error as Error).name}:${cause?.code ?? cause?.message ?? (error as Error).message}`,
        availability.refusedDocumented,
      );
      await sleep(250);
      continue;
    }
    const text = await res.text();
    if (res.status >= 200 && res.status < 300) {
      availability.ok(res.status);
      return text ? JSON.parse(text) : undefined;
    }
    const documented = res.status === 503 && res.headers.get('retry-after') !== null;
    availability.failed(documented ? '503' : `${res.status}:${text.slice(0, 120)}`, documented);
    await sleep(250);
  }
}

export interface IngestLoad {
  availability: Availability;
  /** Events accepted (202) so far. */
  accepted(): number;
  /** Resolves once every event was accepted; rejects past the deadline. */
  done: Promise<void>;
}

/** Posts `events` to ingest at `ratePerS` (batches of `batch`, four requests in flight at most). */
export function startIngestLoad(opts: {
  url: string;
  token: string;
  events: RawEvent[];
  ratePerS: number;
  batch?: number;
  deadlineMs: number;
  /** Behind a balancer: a refused connection is a client error. */
  balanced?: boolean;
}): IngestLoad {
  const batch = opts.batch ?? 100;
  const availability = new Availability(!opts.balanced);
  const started = Date.now();
  const deadline = started + opts.deadlineMs;
  let next = 0;
  let accepted = 0;
  const worker = async () => {
    for (;;) {
      const from = next;
      if (from >= opts.events.length) return;
      next += batch;
      const dueAt = started + (from / opts.ratePerS) * 1000;
      if (dueAt > Date.now()) await sleep(dueAt - Date.now());
      const events = opts.events.slice(from, from + batch);
      await postUntilAccepted(
        `${opts.url}/events`,
        { authorization: `Bearer ${opts.token}` },
        { events },
        availability,
        deadline,
      );
      accepted += events.length;
    }
  };
  const done = Promise.all([worker(), worker(), worker(), worker()]).then(() => undefined);
  return { availability, accepted: () => accepted, done };
}

export interface SendLoad {
  availability: Availability;
  /** Ids of the emails the api accepted (202). */
  acked: string[];
  stop(): Promise<void>;
}

/** `POST /emails/batch` of `batch` emails every `everyMs` until stopped. */
export function startSendLoad(opts: {
  url: () => string;
  authorization: string;
  everyMs?: number;
  batch?: number;
  /** Behind a balancer: a refused connection is a client error. */
  balanced?: boolean;
}): SendLoad {
  const availability = new Availability(!opts.balanced);
  const acked: string[] = [];
  let stopping = false;
  let n = 0;
  const loop = (async () => {
    while (!stopping) {
      const t = Date.now();
      const emails = Array.from({ length: opts.batch ?? 5 }, () => ({
        from: 'Cluster <hello@cluster.test>',
        to: `r${n++}@example.com`,
        subject: `cluster ${n}`,
        text: 'cluster suite',
      }));
      const body = (await postUntilAccepted(
        `${opts.url()}/emails/batch`,
        { authorization: opts.authorization },
        emails,
        availability,
        Date.now() + 300_000,
      )) as { data: { id: string }[] };
      acked.push(...body.data.map((d) => d.id));
      await sleep(Math.max(0, (opts.everyMs ?? 500) - (Date.now() - t)));
    }
  })();
  return {
    availability,
    acked,
    async stop() {
      stopping = true;
      await loop;
    },
  };
}

export interface WebhookReceiver {
  url: string;
  /** Deliveries per webhook-id, and the email each was about. */
  byId: Map<string, { emailId: string; count: number }>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const byId = new Map<string, { emailId: string; count: number }>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      const emailId = String((JSON.parse(body) as { data?: { emailId?: string } }).data?.emailId);
      const seen = byId.get(id);
      if (seen) seen.count++;
      else byId.set(id, { emailId, count: 1 });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    byId,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Each acked email's messages at the SMTP sink (by Message-ID) and webhooks (by webhook-id). */
export function sendFigures(acked: string[], sink: SmtpSink, hooks: WebhookReceiver) {
  const atSink = new Map<string, number>();
  for (const m of sink.received) {
    const id = /^Message-ID:\s*<([^@>]+)@/im.exec(m.raw)?.[1];
    if (id) atSink.set(id, (atSink.get(id) ?? 0) + 1);
  }
  const hooked = new Map<string, number>();
  let hookRepeats = 0;
  for (const d of hooks.byId.values()) {
    hooked.set(d.emailId, (hooked.get(d.emailId) ?? 0) + 1);
    hookRepeats += d.count - 1;
  }
  const hooksMissingIds = acked.filter((id) => !hooked.has(id));
  return {
    acked: acked.length,
    /** Acked emails that never reached the relay. */
    lost: acked.filter((id) => !atSink.has(id)).length,
    /** Messages the relay got more than once (any email, acked or not). */
    double: [...atSink.values()].reduce((s, n) => s + n - 1, 0),
    /** Acked emails whose email.sent webhook never arrived (`whyHooksMissing` says where they are). */
    hooksMissing: hooksMissingIds.length,
    hooksMissingIds,
    /** Deliveries of a webhook-id beyond its first. */
    hookRepeats,
  };
}

/**
 * Where the acked emails without an email.sent webhook are stuck, for a failure's message: their
 * send rows' states, their deliveries' states (none: the dispatcher never made one) and the last
 * errors, and the first ids.
 */
export async function whyHooksMissing(missing: string[], databaseUrl: string): Promise<string> {
  if (missing.length === 0) return 'none missing';
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const { rows } = await pool.query<{ send: string; delivery: string; n: number; error: string | null }>(
      `SELECT COALESCE(o.state, 'no send row') AS send,
              COALESCE(d.status || ' after ' || d.attempts || ' attempts', 'no delivery') AS delivery,
              count(*)::int AS n, max(d.last_error) AS error
         FROM unnest($1::text[]) AS m(id)
         LEFT JOIN outgoing_emails o ON o.id = m.id
         LEFT JOIN webhook_deliveries d ON d.email_id = m.id AND d.event_type = 'email.sent'
        GROUP BY 1, 2`,
      [missing],
    );
    return `${missing.length} missing (${missing.slice(0, 5).join(', ')}…): ${JSON.stringify(rows)}`;
  } catch (error) {
    return `${missing.length} missing; the database could not say why: ${String(error)}`;
  } finally {
    await pool.end();
  }
}
