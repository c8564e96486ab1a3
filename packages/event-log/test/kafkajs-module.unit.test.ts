import { createRequire } from 'node:module';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  kafkajs,
  PATCHED_KAFKAJS,
  type RequestQueueState,
  scheduleCheckPendingRequests,
} from '../src/kafkajs-module.js';

const require = createRequire(import.meta.url);

/** A RequestQueue's state with `checkPendingRequests` as kafkajs's: send what it may, then schedule. */
function queue(opts: { pending?: number; throttledForMs?: number } = {}) {
  let checks = 0;
  const q: RequestQueueState = {
    pending: Array.from({ length: opts.pending ?? 0 }, (_, i) => i),
    throttledUntil: opts.throttledForMs === undefined ? -1 : Date.now() + opts.throttledForMs,
    throttleCheckTimeoutId: null,
    checkPendingRequests() {
      checks++;
      if (this.throttledUntil <= Date.now()) this.pending.length = 0; // sent, once unthrottled
      scheduleCheckPendingRequests.call(this);
    },
  };
  return { q, checks: () => checks };
}

describe("kafkajs's RequestQueue without its endless timer", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('arms nothing when nothing is pending and nothing throttles (kafkajs 2.2.4 armed a 1 ms timer for ever)', () => {
    const { q, checks } = queue();
    q.checkPendingRequests();
    vi.advanceTimersByTime(1000);
    expect(checks()).toBe(1);
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it.each([
    { why: 'requests pending: 10 ms later', pending: 2, throttledForMs: undefined, firstAtMs: 10 },
    { why: 'a throttle, nothing pending: when it ends', pending: 0, throttledForMs: 250, firstAtMs: 250 },
    { why: 'a throttle, requests pending: when it ends', pending: 3, throttledForMs: 250, firstAtMs: 250 },
  ])('checks once with $why, then stops once the queue is sent', ({ pending, throttledForMs, firstAtMs }) => {
    const { q, checks } = queue({ pending, throttledForMs });
    scheduleCheckPendingRequests.call(q);
    vi.advanceTimersByTime(firstAtMs - 1);
    expect(checks()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(checks()).toBe(1);
    expect(q.pending).toHaveLength(0);
    vi.advanceTimersByTime(1000);
    expect(checks()).toBe(1);
  });

  it('keeps a timer already armed (one per queue)', () => {
    const { q, checks } = queue({ pending: 1 });
    scheduleCheckPendingRequests.call(q);
    const armed = q.throttleCheckTimeoutId;
    scheduleCheckPendingRequests.call(q);
    expect(q.throttleCheckTimeoutId).toBe(armed);
    vi.advanceTimersByTime(10);
    expect(checks()).toBe(1);
  });
});

describe('the kafkajs Tern loads', () => {
  it(`is ${PATCHED_KAFKAJS}, the version whose RequestQueue method it replaces (an upgrade re-reads it first)`, () => {
    expect((require('kafkajs/package.json') as { version: string }).version).toBe(PATCHED_KAFKAJS);
  });

  it("has the method in kafkajs's RequestQueue once loaded", () => {
    const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
      prototype: { scheduleCheckPendingRequests: unknown };
    };
    kafkajs();
    expect(RequestQueue.prototype.scheduleCheckPendingRequests).toBe(scheduleCheckPendingRequests);
  });
});
