import { randomBase62 } from '@tern/auth';
import { RESOURCE_ID_PREFIXES, type ResourceKind } from '@tern/contracts';
import { httpError } from '@tern/http';
import { z } from 'zod';
import { logsQuerySchema } from './schemas.js';

/**
 * What every tenant-resource plugin uses (templates, suppressions, projects, webhooks, contacts,
 * campaigns, sequences): ids, paging, and the 404 that hides other tenants' resources.
 */

/** Random part of a resource id: 24 base62 characters ≈ 143 bits (SPEC asks for ≥ 20). */
const RANDOM_ID_LENGTH = 24;

/** A fresh id of that kind: `tpl_…`, `wh_…`. */
export function newResourceId(kind: ResourceKind): string {
  return `${RESOURCE_ID_PREFIXES[kind]}_${randomBase62(RANDOM_ID_LENGTH)}`;
}

/** `?page=&limit=` of every list, validated like the delivery log's (SPEC §7). */
export const pageQuerySchema = logsQuerySchema;
export type PageQuery = z.infer<typeof pageQuerySchema>;

/** SQL `LIMIT`/`OFFSET` of a page. */
export const pageWindow = ({ page, limit }: PageQuery) => ({ limit, offset: (page - 1) * limit });

/**
 * Unknown id, or another tenant's: the same 404 either way (SPEC part two: never 403, never its
 * data).
 */
export const notFound = (what: string) => httpError(404, `${what} not found`);

/** A path parameter that names a resource; anything not shaped like an id is simply not found. */
export const resourceIdParam = (what: string) =>
  z.object({
    id: z
      .string()
      .min(1)
      .max(200)
      .meta({ description: `Id of the ${what}.` }),
  });
