import { type Page, type PageWindow, tenantRecords } from '@tern/kernel';
import type pg from 'pg';

/**
 * Topics (SPEC §27): what a contact may opt in to or out of without leaving everything. A
 * contact's own choices sit in `contacts.topics` (topic id → opt_in | opt_out); a topic it never
 * chose has the topic's default. Campaigns and sequences naming a topic reach its subscribers only
 * (`topicSubscribedSql`).
 */

type Queryable = Pick<pg.Pool, 'query'>;

export type TopicDefault = 'opt_in' | 'opt_out';

export interface Topic {
  id: string;
  name: string;
  default: TopicDefault;
  public: boolean;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  name: string;
  default_subscription: TopicDefault;
  public: boolean;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, name, default_subscription, public, created_at, updated_at';
const toTopic = (r: Row): Topic => ({
  id: r.id,
  name: r.name,
  default: r.default_subscription,
  public: r.public,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});
const TOPICS = tenantRecords<Row, Topic>({ table: 'topics', columns: COLUMNS, map: toTopic });

/**
 * A predicate: contact `alias` is subscribed to topic `topicExpr` of tenant `tenantExpr` — its own
 * choice, else the topic's default; an unknown topic has no subscriber.
 */
export const topicSubscribedSql = (alias: string, tenantExpr: string, topicExpr: string) =>
  `(COALESCE(${alias}.topics ->> ${topicExpr}, (SELECT tp.default_subscription FROM topics tp
     WHERE tp.tenant_id = ${tenantExpr} AND tp.id = ${topicExpr})) = 'opt_in')`;

export async function insertTopic(
  db: Queryable,
  tenantId: string,
  t: { id: string; name: string; default: TopicDefault; public: boolean },
  at: Date,
): Promise<Topic> {
  const { rows } = await db.query<Row>(
    `INSERT INTO topics (tenant_id, id, name, default_subscription, public, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING ${COLUMNS}`,
    [tenantId, t.id, t.name, t.default, t.public, at],
  );
  return toTopic(rows[0]!);
}

export function getTopic(db: Queryable, tenantId: string, id: string): Promise<Topic | null> {
  return TOPICS.get(db, tenantId, id);
}

/** One page, newest first; `publicOnly` for the preference page. */
export async function listTopics(
  db: Queryable,
  tenantId: string,
  q: PageWindow & { publicOnly?: boolean | undefined },
): Promise<Page<Topic>> {
  const only = q.publicOnly === true;
  const [page, count] = await Promise.all([
    db.query<Row>(
      `SELECT ${COLUMNS} FROM topics WHERE tenant_id = $1 AND (NOT $4 OR public)
        ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $2 OFFSET $3::bigint`,
      [tenantId, q.limit, q.offset, only],
    ),
    db.query<{ total: string }>(
      'SELECT count(*) AS total FROM topics WHERE tenant_id = $1 AND (NOT $2 OR public)',
      [tenantId, only],
    ),
  ]);
  return { items: page.rows.map(toTopic), total: Number(count.rows[0]?.total ?? 0) };
}

export async function updateTopic(
  db: Queryable,
  tenantId: string,
  id: string,
  patch: { name?: string | undefined; default?: TopicDefault | undefined; public?: boolean | undefined },
  at: Date,
): Promise<Topic | null> {
  const { rows } = await db.query<Row>(
    `UPDATE topics SET name = COALESCE($3, name), default_subscription = COALESCE($4, default_subscription),
            public = COALESCE($5, public), updated_at = $6
      WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [tenantId, id, patch.name ?? null, patch.default ?? null, patch.public ?? null, at],
  );
  return rows[0] ? toTopic(rows[0]) : null;
}

/**
 * Deletes a topic and the contacts' choices of it; `'in_use'` while a campaign not yet sent or a
 * sequence names it (their mail would reach nobody).
 */
export async function deleteTopic(
  db: Queryable,
  tenantId: string,
  id: string,
): Promise<'deleted' | 'not_found' | 'in_use'> {
  const { rows } = await db.query<{ outcome: 'deleted' | 'not_found' | 'in_use' }>(
    `WITH used AS (
       SELECT 1 FROM campaigns WHERE tenant_id = $1 AND topic_id = $2 AND status IN ('draft', 'scheduled', 'sending')
       UNION ALL SELECT 1 FROM sequences WHERE tenant_id = $1 AND topic_id = $2
       LIMIT 1
     ),
     d AS (DELETE FROM topics WHERE tenant_id = $1 AND id = $2 AND NOT EXISTS (SELECT 1 FROM used) RETURNING id),
     u AS (UPDATE contacts SET topics = topics - $2
            WHERE tenant_id = $1 AND topics ? $2 AND EXISTS (SELECT 1 FROM d))
     SELECT CASE WHEN EXISTS (SELECT 1 FROM d) THEN 'deleted'
                 WHEN EXISTS (SELECT 1 FROM used) THEN 'in_use' ELSE 'not_found' END AS outcome`,
    [tenantId, id],
  );
  const outcome = rows[0]?.outcome ?? 'not_found';
  if (outcome !== 'in_use') return outcome;
  // `used` may name a topic that does not exist: that is a 404 like any unknown id.
  return (await getTopic(db, tenantId, id)) === null ? 'not_found' : 'in_use';
}

/** The ids of `ids` that are no topic of the tenant (a contact write naming them is a 400). */
export async function unknownTopics(
  db: Queryable,
  tenantId: string,
  ids: readonly string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT u.id FROM unnest($2::text[]) AS u(id)
      WHERE NOT EXISTS (SELECT 1 FROM topics t WHERE t.tenant_id = $1 AND t.id = u.id)`,
    [tenantId, [...ids]],
  );
  return rows.map((r) => r.id);
}

/** A contact's effective subscription of each given topic (the preference page). */
export async function contactTopicStates(
  db: Queryable,
  tenantId: string,
  contactId: string,
  topicIds: readonly string[],
): Promise<Map<string, boolean>> {
  const { rows } = await db.query<{ id: string; subscribed: boolean }>(
    `SELECT t.id, COALESCE(c.topics ->> t.id, t.default_subscription) = 'opt_in' AS subscribed
       FROM topics t JOIN contacts c ON c.tenant_id = t.tenant_id AND c.id = $2
      WHERE t.tenant_id = $1 AND t.id = ANY($3::text[])`,
    [tenantId, contactId, [...topicIds]],
  );
  return new Map(rows.map((r) => [r.id, r.subscribed]));
}

/** What the preference page shows: the contact's public topics and whether it receives each. */
export interface Preferences {
  subscribed: boolean;
  topics: { id: string; name: string; subscribed: boolean }[];
}

/** The preference page of an address (SPEC §27): null when the tenant has no contact with it. */
export async function contactPreferences(
  db: Queryable,
  tenantId: string,
  email: string,
): Promise<Preferences | null> {
  const { rows } = await db.query<{
    subscribed: boolean;
    id: string | null;
    name: string | null;
    topic_subscribed: boolean | null;
  }>(
    `SELECT c.subscribed, t.id, t.name,
            COALESCE(c.topics ->> t.id, t.default_subscription) = 'opt_in' AS topic_subscribed
       FROM contacts c
       LEFT JOIN LATERAL (SELECT id, name, default_subscription, created_at FROM topics
                           WHERE tenant_id = c.tenant_id AND public
                           ORDER BY created_at, id COLLATE "C" LIMIT 100) t ON true
      WHERE c.tenant_id = $1 AND c.email = $2
      ORDER BY t.created_at, t.id COLLATE "C"`,
    [tenantId, email.toLowerCase()],
  );
  if (rows.length === 0) return null;
  return {
    subscribed: rows[0]!.subscribed,
    topics: rows
      .filter((r) => r.id !== null)
      .map((r) => ({ id: r.id!, name: r.name!, subscribed: r.topic_subscribed === true })),
  };
}

/**
 * Saves the preference page's form: every public topic of the tenant becomes `opt_in` when it is
 * in `chosen`, `opt_out` otherwise (ids of no public topic are ignored). False without a contact.
 */
export async function savePreferences(
  db: Queryable,
  tenantId: string,
  email: string,
  chosen: readonly string[],
  at: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE contacts c SET updated_at = $4,
            topics = c.topics || COALESCE((
              SELECT jsonb_object_agg(t.id, CASE WHEN t.id = ANY($3::text[]) THEN 'opt_in' ELSE 'opt_out' END)
                FROM topics t WHERE t.tenant_id = $1 AND t.public), '{}')
      WHERE c.tenant_id = $1 AND c.email = $2`,
    [tenantId, email.toLowerCase(), [...chosen], at],
  );
  return (rowCount ?? 0) > 0;
}
