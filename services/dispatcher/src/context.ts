import type { EventStream } from '@tern/event-log';
import type { Logger } from '@tern/kernel';
import type pg from 'pg';
import type { DispatcherOptions } from './options.js';

/** What the dispatcher's jobs share: its options with their defaults, the clock and whether it runs. */
export interface DispatcherContext {
  opts: DispatcherOptions;
  pool: pg.Pool;
  log: EventStream;
  now: () => Date;
  logger: Logger;
  /** False once `stop()` began: loops end after their current step. */
  running: () => boolean;
  /** Wakes the delivery workers (new deliveries are due). */
  wakeWorkers: () => void;
}

/** An error as a log field: its message only, not the whole error object. */
export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
