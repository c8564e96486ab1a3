import type { ProviderHealth, SenderContext } from './options.js';
import type { ProviderFault, ProviderResult } from './ports.js';

export interface ProviderWatch {
  /** Follows the provider's answers: a fault makes it failing, anything else (sent, about a recipient) working. */
  note(result: ProviderResult | { fault: ProviderFault } | null): void;
  /** While failing, asks the provider now and then whether it works again (no mail may be due). */
  check(): Promise<void>;
  health(): ProviderHealth;
}

/** Whether the provider is failing (issue 24 item 13), from its answers and its `check()`. */
export function createProviderWatch(ctx: SenderContext): ProviderWatch {
  const { opts, logger, now } = ctx;
  const providerCheckIntervalMs = opts.providerCheckIntervalMs ?? 30_000;
  let health: ProviderHealth = { failing: false };
  let lastCheck = 0;

  /** Follows the provider's answers: a fault makes it failing, anything else (sent, about a recipient) working. */
  function noteProvider(result: ProviderResult | { fault: ProviderFault } | null): void {
    const fault = result !== null && 'fault' in result ? result.fault : undefined;
    if (fault) {
      opts.onProviderFault?.(fault);
      if (!health.failing) {
        health = { failing: true, since: now(), fault, faults: 1 };
        lastCheck = now().getTime();
        logger.warn({ step: fault.step, code: fault.code }, 'sender: mail provider failing; mail is retried');
      } else {
        health = { ...health, fault, faults: health.faults + 1 };
      }
    } else if (health.failing) {
      logger.info({ faults: health.faults }, 'sender: mail provider works again');
      health = { failing: false };
    }
  }

  /** While failing, asks the provider now and then whether it works again (no mail may be due). */
  async function checkProvider(): Promise<void> {
    if (!health.failing || !opts.provider.check) return;
    if (now().getTime() - lastCheck < providerCheckIntervalMs) return;
    lastCheck = now().getTime();
    const fault = await opts.provider.check();
    noteProvider(fault === null ? null : { fault });
  }

  return { note: noteProvider, check: checkProvider, health: () => health };
}
