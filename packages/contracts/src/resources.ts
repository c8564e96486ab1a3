import { z } from 'zod';

/**
 * The shapes every tenant resource shares (SPEC part two preamble): prefixed ids, and lists that
 * answer `{ data, meta }` paged like the delivery log (SPEC §7).
 */

/** Id prefixes of created resources; the creation time (10 characters) and ≥ 20 random base62 characters follow. */
export const RESOURCE_ID_PREFIXES = {
  email: 'em',
  template: 'tpl',
  contact: 'ct',
  campaign: 'cmp',
  sequence: 'seq',
  automation: 'aut',
  project: 'prj',
  webhook: 'wh',
  domain: 'dom',
  inboundRoute: 'inr',
  topic: 'top',
  segment: 'seg',
} as const;
export type ResourceKind = keyof typeof RESOURCE_ID_PREFIXES;

/** `meta` of every list (SPEC §7): `totalPages = ceil(total / limit)`; a page past the end has `data: []`. */
export const listMetaSchema = z.object({
  page: z.number().int(),
  limit: z.number().int(),
  total: z.number().int(),
  totalPages: z.number().int(),
});
export type ListMeta = z.infer<typeof listMetaSchema>;

/** `{ data: T[], meta }`, the answer of every list route. */
export const listResponseSchema = <T extends z.ZodType>(item: T) =>
  z.object({ data: z.array(item), meta: listMetaSchema });

export function listMeta(page: number, limit: number, total: number): ListMeta {
  return { page, limit, total, totalPages: Math.ceil(total / limit) };
}

/** `?page=&limit=` of a list, validated (the api's `pageQuerySchema`). */
export interface PageQuery {
  page: number;
  limit: number;
}

/**
 * SQL `LIMIT`/`OFFSET` of a page. The offset is bigint text: `(page − 1) · limit` passes 2^53 for
 * absurd pages (a page past the end is `data: []`, never a 500); bind it as `$n::bigint`.
 */
export const pageWindow = ({ page, limit }: PageQuery) => ({
  limit,
  offset: ((BigInt(page) - 1n) * BigInt(limit)).toString(),
});

/** A string answer field that may be null, with its `description` in the API reference. */
export const nullableString = (description: string) => z.string().nullable().meta({ description });
