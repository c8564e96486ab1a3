import { engagedSql, recipientTaggedSql } from '@tern/read-models';
import { z } from 'zod';
import { topicSubscribedSql } from '../topics/store.js';

/**
 * The segment filter (SPEC §27): a tree of clauses over a tenant's contacts, and its compiler to
 * one SQL predicate over `contacts c`. Segments, a campaign's `segment` and the automations' `if`
 * steps share it: "does contact X match F" is `SELECT 1 FROM contacts c WHERE <where> AND c.id = $n`.
 *
 * A tree is bounded (depth ≤ MAX_FILTER_DEPTH, clauses ≤ MAX_FILTER_NODES) so that a stored filter
 * always compiles to a statement Postgres plans quickly.
 */

export const MAX_FILTER_DEPTH = 8;
export const MAX_FILTER_NODES = 100;
/** Engagement windows: 1 day to 10 years. */
export const MAX_ENGAGEMENT_DAYS = 3650;

export const PROPERTY_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'contains', 'exists'] as const;
export type PropertyOp = (typeof PROPERTY_OPS)[number];
export const ENGAGEMENT_KINDS = ['opened', 'clicked', 'bounced', 'received'] as const;
export type EngagementKind = (typeof ENGAGEMENT_KINDS)[number];

/** A property name: the shape `POST /contact-properties` accepts. */
export const propertyNameSchema = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, 'a letter, then up to 63 letters, digits or _');

const name = z.string().trim().min(1).max(256);

export type SegmentFilter =
  | { and: SegmentFilter[] }
  | { or: SegmentFilter[] }
  | { not: SegmentFilter }
  | { property: string; op: PropertyOp; value?: string | number | boolean | undefined }
  | { audience: string }
  | { topic: string }
  | { engagement: EngagementKind; days: number }
  | { tag: string }
  | { campaign: string };

const node: z.ZodType<SegmentFilter> = z
  .lazy(
    () =>
      z.union([
        z.strictObject({ and: z.array(node).min(1).max(MAX_FILTER_NODES) }),
        z.strictObject({ or: z.array(node).min(1).max(MAX_FILTER_NODES) }),
        z.strictObject({ not: node }),
        z
          .strictObject({
            property: propertyNameSchema,
            op: z.enum(PROPERTY_OPS),
            value: z.union([z.string().max(1000), z.number().finite(), z.boolean()]).optional(),
          })
          .superRefine((p, ctx) => {
            if (p.op === 'exists') {
              if (p.value !== undefined)
                ctx.addIssue({ code: 'custom', path: ['value'], message: 'exists takes no value' });
              return;
            }
            if (p.value === undefined)
              ctx.addIssue({ code: 'custom', path: ['value'], message: `${p.op} needs a value` });
            else if (p.op === 'contains' && typeof p.value !== 'string')
              ctx.addIssue({ code: 'custom', path: ['value'], message: 'contains needs a string' });
            else if (['gt', 'gte', 'lt', 'lte'].includes(p.op) && typeof p.value === 'boolean')
              ctx.addIssue({ code: 'custom', path: ['value'], message: `${p.op} needs a number or a date` });
          }),
        z.strictObject({ audience: name }),
        z.strictObject({ topic: name }),
        z.strictObject({
          engagement: z.enum(ENGAGEMENT_KINDS),
          days: z.number().int().min(1).max(MAX_ENGAGEMENT_DAYS),
        }),
        z.strictObject({ tag: name }),
        z.strictObject({ campaign: name }),
      ]),
    // An id: the tree is recursive, so the OpenAPI document holds it as one component it refers to.
  )
  .meta({ id: 'SegmentFilterClause' });

/** Depth (a leaf is 1) and clause count of a tree. */
export function filterSize(f: SegmentFilter): { depth: number; nodes: number } {
  if ('and' in f || 'or' in f) {
    const kids = ('and' in f ? f.and : f.or).map(filterSize);
    return {
      depth: 1 + Math.max(0, ...kids.map((k) => k.depth)),
      nodes: 1 + kids.reduce((n, k) => n + k.nodes, 0),
    };
  }
  if ('not' in f) {
    const k = filterSize(f.not);
    return { depth: 1 + k.depth, nodes: 1 + k.nodes };
  }
  return { depth: 1, nodes: 1 };
}

/** A segment filter, bounded in depth and size (400 with the reason otherwise). */
export const segmentFilterSchema: z.ZodType<SegmentFilter> = node.superRefine((f, ctx) => {
  const { depth, nodes } = filterSize(f);
  if (depth > MAX_FILTER_DEPTH)
    ctx.addIssue({ code: 'custom', message: `filter nested ${depth} deep; at most ${MAX_FILTER_DEPTH}` });
  if (nodes > MAX_FILTER_NODES)
    ctx.addIssue({ code: 'custom', message: `filter has ${nodes} clauses; at most ${MAX_FILTER_NODES}` });
});

/** Every property, topic and campaign a filter names (the routes check they exist). */
export function filterReferences(f: SegmentFilter): {
  properties: Set<string>;
  topics: Set<string>;
  campaigns: Set<string>;
} {
  const out = { properties: new Set<string>(), topics: new Set<string>(), campaigns: new Set<string>() };
  const walk = (x: SegmentFilter): void => {
    if ('and' in x) x.and.forEach(walk);
    else if ('or' in x) x.or.forEach(walk);
    else if ('not' in x) walk(x.not);
    else if ('property' in x) out.properties.add(x.property);
    else if ('topic' in x) out.topics.add(x.topic);
    else if ('campaign' in x) out.campaigns.add(x.campaign);
  };
  walk(f);
  return out;
}

export interface CompileOptions {
  /** The tenant whose contacts are filtered: the clause begins with `c.tenant_id = $k`. */
  tenantId: string;
  /** The statement's parameters: the compiler appends its values and names them `$<index + 1>`. */
  params: unknown[];
  /** "Now" of the engagement windows; absent: the database's `now()`. */
  at?: Date | undefined;
}

const OPS_SQL = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/**
 * The filter as a SQL predicate over `contacts c` (alias `c`), scoped to the tenant. Values go
 * into `params`, never into the text. Properties are compared as jsonb of the same type (a value
 * of another type never matches: `neq` counts a missing or other-typed value as different);
 * engagement and tags read the projector's per-recipient rollup (`engagedSql`,
 * `recipientTaggedSql`) and a campaign its `bulk_emails` rows, each an indexed semi-join.
 */
export function compileSegmentFilter(filter: SegmentFilter, opts: CompileOptions): string {
  const { params } = opts;
  const p = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  const tenant = p(opts.tenantId);
  // "Now" is a parameter only when a clause reads it (Postgres refuses a parameter of no use).
  let nowSql: string | null = null;
  const now = () => {
    nowSql ??= opts.at === undefined ? 'now()' : `${p(opts.at)}::timestamptz`;
    return nowSql;
  };

  const clause = (f: SegmentFilter): string => {
    if ('and' in f) return `(${f.and.map(clause).join(' AND ')})`;
    if ('or' in f) return `(${f.or.map(clause).join(' OR ')})`;
    if ('not' in f) return `(NOT ${clause(f.not)})`;
    if ('property' in f) return propertyClause(f);
    if ('audience' in f) return `(c.audiences @> ARRAY[${p(f.audience)}::text])`;
    if ('topic' in f) return topicClause(f.topic);
    if ('engagement' in f) {
      const since = `(${now()} - make_interval(days => ${p(f.days)}::int))`;
      return engagedSql(tenant, 'c.email', f.engagement, since);
    }
    if ('tag' in f) return recipientTaggedSql(tenant, 'c.email', p(f.tag));
    return `EXISTS (SELECT 1 FROM bulk_emails b WHERE b.tenant_id = ${tenant} AND b.source = ${p(
      `campaign:${f.campaign}`,
    )} AND b.contact_id = c.id)`;
  };

  const propertyClause = (f: Extract<SegmentFilter, { property: string }>): string => {
    const key = p(f.property);
    const v = `c.properties -> ${key}`;
    if (f.op === 'exists') return `(c.properties ? ${key})`;
    if (f.op === 'contains')
      return `(jsonb_typeof(${v}) = 'string' AND strpos(lower(${v} #>> '{}'), lower(${p(f.value)}::text)) > 0)`;
    const typ = typeof f.value === 'number' ? 'number' : typeof f.value === 'boolean' ? 'boolean' : 'string';
    const value = `${p(JSON.stringify(f.value))}::jsonb`;
    const same = `jsonb_typeof(${v}) = '${typ}'`;
    // jsonb equality is typed already ('"2"' <> '2'); the extra test would only blur the estimate.
    if (f.op === 'eq') return `(${v} = ${value})`;
    if (f.op === 'neq') return `(NOT COALESCE(${same} AND ${v} = ${value}, false))`;
    return `(${same} AND ${v} ${OPS_SQL[f.op]} ${value})`;
  };

  /** Subscribed: the contact's own choice, else the topic's default (an unknown topic: nobody). */
  const topicClause = (id: string): string => topicSubscribedSql('c', tenant, p(id));

  return `(c.tenant_id = ${tenant} AND ${clause(filter)})`;
}
