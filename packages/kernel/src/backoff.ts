/**
 * The one exponential backoff of Tern's retries: `initialMs` after the first failure, doubling
 * after each further one, at most `maxMs` (`attempt` counts the failures in a row, from 1). The
 * poller, the event-log adapters, the sender's append and the projector's store retries use it
 * (the projector draws its wait in [½, 1] of it, so instances do not retry in step).
 */
export interface BackoffOptions {
  /** Wait after the first failure. Default 100 ms. */
  initialMs?: number;
  /** Longest wait. Default 5 s. */
  maxMs?: number;
}

export function backoffMs(attempt: number, opts: BackoffOptions = {}): number {
  const initialMs = opts.initialMs ?? 100;
  const maxMs = opts.maxMs ?? 5_000;
  return Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt - 1));
}
