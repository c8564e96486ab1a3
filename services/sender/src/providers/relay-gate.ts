import type { SmtpError } from './smtp-errors.js';

/**
 * How many messages the relay may hold at once (issue 45, item 1): the SMTP provider's transactions
 * in flight, and so its pooled connections (nodemailer opens one per message in flight, up to the
 * cap). The bound adapts to the relay, as TCP's window does to a path:
 * - it starts at `initial` (safe for a small relay);
 * - every transaction the relay takes while the bound was in use (messages were waiting for a
 *   slot) raises it by one until the first push-back (slow start: it doubles per round trip), by
 *   one per bound's worth of taken transactions after it (additive increase);
 * - a push-back halves it (multiplicative decrease), from the transactions in flight then; the
 *   refusals of transactions started before that decrease were sent under the old bound and are
 *   not counted again (several refused at once are one signal, as TCP counts one loss per window);
 * - it never leaves [1, `max`] (`max`: SMTP_MAX_CONNECTIONS, the operator's cap per relay).
 * A push-back is the relay saying "not so many": a 421 at any step (RFC 5321: service not
 * available, closing the channel; what Postfix and smtp-server answer past their connection limits),
 * a 4xx before the message (greeting, EHLO, AUTH, MAIL FROM: "too many connections", "rate
 * limited"), a 4xx at RCPT TO or DATA, or a refused connection.
 */
export interface RelayGate {
  /** Waits for a slot, runs `send`, frees the slot. */
  run<T>(send: () => Promise<T>): Promise<T>;
  /** What the relay answered to a transaction that `run` started at `startedAt` (performance.now()). */
  taken(startedAt: number): void;
  pushedBack(startedAt: number): void;
  /** The bound now (a round of the due-list is sized from it). */
  limit(): number;
  /** How long a taken transaction lasts (moving average, ms). */
  latencyMs(): number;
  stats(): RelayGateStats;
  /** Whether a transaction of the relay is in flight or one was taken in the last `withinMs` (asked outside `run`). */
  alive(withinMs: number): boolean;
}

export interface RelayGateStats {
  limit: number;
  inFlight: number;
  peakInFlight: number;
  pushBacks: number;
}

export interface RelayGateOptions {
  initial: number;
  max: number;
  now?: () => number;
}

export function createRelayGate(opts: RelayGateOptions): RelayGate {
  const max = Math.max(1, opts.max);
  const now = opts.now ?? (() => performance.now());
  let bound = Math.max(1, Math.min(max, opts.initial));
  /** Additive increase: the fraction of one slot earned so far. */
  let credit = 0;
  let slowStart = true;
  let inFlight = 0;
  let peakInFlight = 0;
  let pushBacks = 0;
  let lastPushBack = Number.NEGATIVE_INFINITY;
  let lastTaken = Number.NEGATIVE_INFINITY;
  let latency = 0;
  const waiting: (() => void)[] = [];

  const admit = () => {
    while (waiting.length > 0 && inFlight < Math.floor(bound)) {
      inFlight++;
      peakInFlight = Math.max(peakInFlight, inFlight);
      waiting.shift()!();
    }
  };

  return {
    async run(send) {
      if (inFlight < Math.floor(bound) && waiting.length === 0) {
        inFlight++;
        peakInFlight = Math.max(peakInFlight, inFlight);
      } else await new Promise<void>((resolve) => waiting.push(resolve));
      try {
        return await send();
      } finally {
        inFlight--;
        admit();
      }
    },
    taken(startedAt) {
      lastTaken = now();
      latency = latency === 0 ? lastTaken - startedAt : 0.9 * latency + 0.1 * (lastTaken - startedAt);
      // Grow only while the bound is what holds messages back (messages wait for a slot).
      if (waiting.length === 0 || bound >= max) return;
      if (slowStart) bound = Math.min(max, bound + 1);
      else {
        credit += 1 / bound;
        if (credit >= 1) {
          credit -= 1;
          bound = Math.min(max, bound + 1);
        }
      }
      admit();
    },
    pushedBack(startedAt) {
      const at = now();
      // Refusals of transactions started before the last decrease were sent under the old bound.
      if (startedAt <= lastPushBack) return;
      lastPushBack = at;
      pushBacks++;
      slowStart = false;
      credit = 0;
      bound = Math.max(1, Math.floor(Math.min(bound, inFlight) / 2));
    },
    limit: () => Math.floor(bound),
    latencyMs: () => latency,
    stats: () => ({ limit: Math.floor(bound), inFlight, peakInFlight, pushBacks }),
    alive: (withinMs) => inFlight > 0 || now() - lastTaken <= withinMs,
  };
}

/**
 * Whether a nodemailer error is the relay pushing back (see `RelayGate`), and whether the message
 * certainly did not reach it (`unsent`: a reply refused it, or the connection was refused), so it
 * may be handed over again at once without a second copy arriving.
 */
export function pushBackOf(error: unknown): { pushBack: boolean; unsent: boolean } {
  const e = (error ?? {}) as SmtpError & { originalCode?: string };
  const code = typeof e.responseCode === 'number' ? e.responseCode : 0;
  const refused = e.originalCode === 'ECONNREFUSED' || e.code === 'ECONNREFUSED';
  if (refused) return { pushBack: true, unsent: true };
  if (code < 400 || code >= 500) return { pushBack: false, unsent: false };
  const step = e.command ?? '';
  // A reply about the recipient (450 mailbox busy, greylisting) is the recipient's: retried later as
  // before. The relay's own refusals: every 421, and a 4xx before any recipient was named.
  const relays = code === 421 || ['CONN', 'EHLO', 'HELO', 'LHLO', 'MAIL FROM', 'RSET'].includes(step);
  const aboutTheRelay = relays || step.startsWith('AUTH');
  return { pushBack: true, unsent: aboutTheRelay };
}
