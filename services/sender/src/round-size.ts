import type { ProviderCapacity } from './ports.js';

/**
 * The size of the next claim round (issue 29): a round that came back full and took at most half
 * of `targetMs` doubles the next one (up to `max`), one that took over `targetMs` halves it (down
 * to `min`), and a round that was not full (the backlog is drained) starts again from `min`. A
 * backlog is then sent in rounds of hundreds (the round's statements, its append and its provider
 * batch shared by that many emails), while a round never keeps the next claim waiting much longer
 * than `targetMs`. After a round with campaign or sequence mail in it, `max` is the (smaller) bulk
 * one: a transactional email that arrives behind a campaign waits for at most such a round.
 */
export function nextRoundSize(
  size: number,
  claimed: number,
  tookMs: number,
  limits: { min: number; max: number; targetMs: number },
): number {
  if (claimed < size) return limits.min;
  if (tookMs > limits.targetMs) return Math.max(limits.min, Math.min(limits.max, Math.floor(size / 2)));
  return Math.max(limits.min, Math.min(limits.max, tookMs <= limits.targetMs / 2 ? size * 2 : size));
}

/**
 * The round limits with the relay in view (issue 45). `capacity().inFlight` is what the relay takes
 * at once now (it grows while the relay takes them):
 * - a round holds at least that many, so the rounds in flight keep the relay's slots full while
 *   they grow (smaller rounds starved them: the bound stops growing when no message waits for it);
 * - and at most twice that many, so every connection has a second message waiting; with several
 *   `lanes` at most half of `max`, the budget of claimed emails they share, so a second round is
 *   with the relay while one round's outcomes are written (one round of the whole budget left the
 *   relay idle between rounds);
 * - a round may last three of the relay's transactions longer than `targetMs` (a relay that
 *   answers after 200 ms makes every round last that long, which is no reason for smaller rounds).
 * Without a capacity: the limits as they are.
 */
export function relayLimits(
  limits: { min: number; max: number; targetMs: number },
  capacity: ProviderCapacity | undefined,
  lanes: number,
): { min: number; max: number; targetMs: number } {
  if (capacity === undefined) return limits;
  const perRound = lanes > 1 ? Math.floor(limits.max / 2) : limits.max;
  return {
    min: Math.max(limits.min, Math.min(perRound, capacity.inFlight)),
    max: Math.max(limits.min, Math.min(perRound, 2 * capacity.inFlight)),
    targetMs: limits.targetMs + 3 * capacity.latencyMs,
  };
}

/** Claim rounds in flight at most per instance while transactional mail is backlogged (`SenderOptions.lanes`). */
export const DEFAULT_LANES = 4;
