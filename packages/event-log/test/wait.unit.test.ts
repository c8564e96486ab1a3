import { describe, expect, it } from 'vitest';
import { createWakeSignal } from '../src/wait.js';

const settled = (p: Promise<void>) =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 50))]);

describe('createWakeSignal', () => {
  it('resolves a wait on wake, or after its time', async () => {
    const signal = createWakeSignal();
    const woken = signal.wait(60_000);
    signal.wake();
    expect(await settled(woken)).toBe(true);
    expect(await settled(signal.wait(10))).toBe(true);
  });

  it('does not keep a wake nobody waited for, unless the wait counts wakes since before it', async () => {
    const signal = createWakeSignal();
    const since = signal.wakes();
    signal.wake(); // while the caller was busy, before it waits
    expect(await settled(signal.wait(60_000))).toBe(false);
    expect(await settled(signal.wait(60_000, since))).toBe(true);
    expect(await settled(signal.wait(60_000, signal.wakes()))).toBe(false);
    signal.close();
  });

  it('after close, resolves every wait at once', async () => {
    const signal = createWakeSignal();
    const pending = signal.wait(60_000);
    signal.close();
    expect(await settled(pending)).toBe(true);
    expect(await settled(signal.wait(60_000))).toBe(true);
  });
});
