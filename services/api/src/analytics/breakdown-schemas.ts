import { DIMENSIONS, type Dimension } from '@tern/read-models';
import { z } from 'zod';
import { queryInteger } from '../schemas.js';
import { MAX_ANALYTICS_DAYS } from './schemas.js';

/** Schemas of `/analytics/breakdown` and `/analytics/deliverability` (SPEC §26). */

const dayMessage = (field: string) => `${field} must be a date YYYY-MM-DD`;
const localDate = (field: string) =>
  z
    .string({ error: dayMessage(field) })
    .regex(/^\d{4}-\d{2}-\d{2}$/, { error: dayMessage(field) })
    .refine(
      (d) =>
        !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d),
      {
        error: dayMessage(field),
      },
    )
    .optional()
    .meta({
      description: `${field === 'from' ? 'First' : 'Last'} day, inclusive, in the tenant’s time zone (with the other bound; replaces days).`,
    });

const filterValue = (dim: Dimension) =>
  z
    .string({ error: `${dim} must be a string` })
    .min(0)
    .max(256, { error: `${dim} must be at most 256 characters` })
    .optional()
    .meta({ description: `Only emails whose ${dim} is this value (empty: none).` });

const rangeFields = {
  days: queryInteger('days', 1, MAX_ANALYTICS_DAYS, 30),
  from: localDate('from'),
  to: localDate('to'),
  ...(Object.fromEntries(DIMENSIONS.map((d) => [d, filterValue(d)])) as Record<
    Dimension,
    ReturnType<typeof filterValue>
  >),
};

const bothOrNeither = (q: { from?: string | undefined; to?: string | undefined }) =>
  (q.from === undefined) === (q.to === undefined);
const ordered = (q: { from?: string | undefined; to?: string | undefined }) =>
  q.from === undefined || q.to === undefined || q.from <= q.to;
const spanOk = (q: { from?: string | undefined; to?: string | undefined }) =>
  q.from === undefined ||
  q.to === undefined ||
  Date.parse(`${q.to}T00:00:00Z`) - Date.parse(`${q.from}T00:00:00Z`) < MAX_ANALYTICS_DAYS * 86_400_000;
const BOUNDS = `from and to go together, from ≤ to, at most ${MAX_ANALYTICS_DAYS} days`;

export const breakdownQuerySchema = z
  .object({
    by: z
      .enum(DIMENSIONS as [Dimension, ...Dimension[]], {
        error: `by must be one of ${DIMENSIONS.join(', ')}`,
      })
      .meta({ description: 'The dimension of the rows.' }),
    interval: z
      .enum(['hour', 'day'], { error: 'interval must be hour or day' })
      .optional()
      .meta({ description: 'Adds a zero-filled series per row, by local hour or day.' }),
    limit: queryInteger('limit', 1, 1000, 100),
    ...rangeFields,
  })
  .refine(bothOrNeither, { error: BOUNDS, path: ['from'] })
  .refine(ordered, { error: BOUNDS, path: ['from'] })
  .refine(spanOk, { error: BOUNDS, path: ['from'] });

export const deliverabilityQuerySchema = z
  .object(rangeFields)
  .refine(bothOrNeither, { error: BOUNDS, path: ['from'] })
  .refine(ordered, { error: BOUNDS, path: ['from'] })
  .refine(spanOk, { error: BOUNDS, path: ['from'] });

// The answers' schemas are the contracts' (`@tern/contracts` analytics.ts), pinned there to the wire types.
export { breakdownResponseSchema, deliverabilityResponseSchema } from '@tern/contracts';
