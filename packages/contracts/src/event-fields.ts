import { z } from 'zod';

/**
 * Field types the delivery event schemas share (`event-data.ts`, `events.ts`). Internal to the
 * contracts: `index.ts` does not re-export this module.
 */

export const isoTimestamp = (what: string) =>
  z.iso.datetime({ offset: true, error: `${what} must be an ISO 8601 timestamp` });

export const nonEmpty = (what: string, max = 1000) =>
  z
    .string({ error: `${what} must be a string` })
    .min(1, { error: `${what} must not be empty` })
    .max(max, { error: `${what} must be at most ${max} characters` });
