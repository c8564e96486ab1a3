import { deleteTenantRow } from '@tern/kernel';
import type pg from 'pg';
import { z } from 'zod';

/**
 * Inbound routes (SPEC §24): `{ match: { recipient, from?, subject? }, priority, actions }`; the
 * first matching route by priority (then age) acts. Owns `inbound_routes`.
 */

const pattern = z
  .string()
  .min(1)
  .max(320)
  .refine(
    (p) => {
      if (!p.startsWith('/')) return true;
      try {
        new RegExp(patternBody(p), 'i');
        return true;
      } catch {
        return false;
      }
    },
    { error: 'must be an address, "*@domain" or a /regex/' },
  );

export const routeActionSchema = z.union([
  z.strictObject({ webhook: z.string().min(1).max(64) }),
  z.strictObject({ forward: z.email({ error: 'forward must be an email address' }) }),
  z.strictObject({ store: z.literal(true) }),
  z.strictObject({ drop: z.literal(true) }),
]);
export type RouteAction = z.infer<typeof routeActionSchema>;

export const createRouteBodySchema = z.strictObject({
  match: z.strictObject({ recipient: pattern, from: pattern.optional(), subject: pattern.optional() }),
  priority: z.number().int().min(0).max(1_000_000),
  actions: z.array(routeActionSchema).min(1).max(10),
});
export type CreateRouteBody = z.infer<typeof createRouteBodySchema>;

export interface InboundRoute extends CreateRouteBody {
  id: string;
  createdAt: string;
}

/** `/re/` → `re` (a pattern given as a regex). */
function patternBody(p: string): string {
  return p.replace(/^\/(.*)\/$/, '$1');
}

/** Whether `value` matches a pattern: exact (no case), `*@domain`, or `/regex/` (case-insensitive). */
export function matches(patternText: string, value: string): boolean {
  const v = value.toLowerCase();
  if (patternText.startsWith('/') && patternText.endsWith('/') && patternText.length > 2) {
    try {
      return new RegExp(patternBody(patternText), 'i').test(value);
    } catch {
      return false;
    }
  }
  const p = patternText.toLowerCase();
  if (p.startsWith('*@')) return v.endsWith(p.slice(1));
  return v === p;
}

/** The first route (by priority, then age) matching any recipient, the sender and the subject. */
export function firstMatch(
  routes: readonly InboundRoute[],
  message: { recipients: readonly string[]; from: string; subject: string | null },
): InboundRoute | null {
  const sorted = [...routes].sort(
    (a, b) => a.priority - b.priority || a.createdAt.localeCompare(b.createdAt),
  );
  for (const r of sorted) {
    if (!message.recipients.some((to) => matches(r.match.recipient, to))) continue;
    if (r.match.from !== undefined && !matches(r.match.from, message.from)) continue;
    if (r.match.subject !== undefined && !matches(r.match.subject, message.subject ?? '')) continue;
    return r;
  }
  return null;
}

type Row = {
  id: string;
  priority: number;
  match: InboundRoute['match'];
  actions: RouteAction[];
  created_at: Date;
};
const toRoute = (r: Row): InboundRoute => ({
  id: r.id,
  priority: r.priority,
  match: r.match,
  actions: r.actions,
  createdAt: r.created_at.toISOString(),
});

/** The tenant's routes, by priority then age, 1 000 at most; `tenantParam` names the tenant (`$1`). */
const routesOfTenantSql = (tenantParam: string): string =>
  `SELECT id, priority, match, actions, created_at FROM inbound_routes WHERE tenant_id = ${tenantParam}
   ORDER BY priority, created_at LIMIT 1000`;

/**
 * The tenant's routes (as {@link listRoutes} reads them) as one JSON value, for a statement
 * that reads them beside its own work: the store's (`storeInbound`), so an arrival reads its routes
 * in the round trip that stores it (issue 43). `tenantParam` is the statement's parameter naming the
 * tenant (`$2`). Read back with {@link routesFromJson}.
 */
export const routesJsonSql = (tenantParam: string): string =>
  `(SELECT coalesce(json_agg(json_build_object('id', r.id, 'priority', r.priority, 'match', r.match,
       'actions', r.actions, 'createdAtMs', floor(extract(epoch FROM r.created_at) * 1000))
       ORDER BY r.priority, r.created_at), '[]'::json)
      FROM (${routesOfTenantSql(tenantParam)}) r)`;

/** One route in {@link routesJsonSql}'s value. */
export type RouteJson = Omit<Row, 'created_at'> & { createdAtMs: number };

/** The routes of {@link routesJsonSql}'s value, as {@link listRoutes} answers them. */
export function routesFromJson(value: readonly RouteJson[]): InboundRoute[] {
  return value.map(({ createdAtMs, ...r }) => toRoute({ ...r, created_at: new Date(createdAtMs) }));
}

export async function insertRoute(
  db: pg.Pool | pg.ClientBase,
  tenantId: string,
  id: string,
  body: CreateRouteBody,
): Promise<InboundRoute> {
  const { rows } = await db.query<Row>(
    `INSERT INTO inbound_routes (id, tenant_id, priority, match, actions) VALUES ($1, $2, $3, $4, $5)
     RETURNING id, priority, match, actions, created_at`,
    [id, tenantId, body.priority, JSON.stringify(body.match), JSON.stringify(body.actions)],
  );
  return toRoute(rows[0]!);
}

export async function listRoutes(db: pg.Pool | pg.ClientBase, tenantId: string): Promise<InboundRoute[]> {
  const { rows } = await db.query<Row>(routesOfTenantSql('$1'), [tenantId]);
  return rows.map(toRoute);
}

/** Replaces a route's match, priority and actions (its id and age stay); null when the tenant has no such route. */
export async function updateRoute(
  db: pg.Pool | pg.ClientBase,
  tenantId: string,
  id: string,
  body: CreateRouteBody,
): Promise<InboundRoute | null> {
  const { rows } = await db.query<Row>(
    `UPDATE inbound_routes SET priority = $3, match = $4, actions = $5 WHERE tenant_id = $1 AND id = $2
     RETURNING id, priority, match, actions, created_at`,
    [tenantId, id, body.priority, JSON.stringify(body.match), JSON.stringify(body.actions)],
  );
  return rows[0] ? toRoute(rows[0]) : null;
}

export function deleteRoute(db: pg.Pool | pg.ClientBase, tenantId: string, id: string): Promise<boolean> {
  return deleteTenantRow(db, 'inbound_routes', tenantId, id);
}
