import type {
  CreateSequenceBody,
  Enrollment,
  EnrollmentState,
  Sequence,
  UpdateSequenceBody,
} from '@tern/contracts';
import { type PageQuery, pageWindow } from '@tern/contracts';
import { newestFirstPage, type Page } from '@tern/kernel';
import type pg from 'pg';
import { mailStats, statsKey, ZERO_STATS } from '../stats.js';

/** Sequences and their enrollments in Postgres (SPEC §15). */

type Queryable = Pick<pg.Pool, 'query'>;

export interface StoredStep {
  delayMinutes: number;
  templateId: string | null;
  subject: string | null;
  html: string | null;
  text: string | null;
}

interface SequenceRow {
  id: string;
  name: string;
  from_address: string;
  topic_id: string | null;
  steps: StoredStep[];
  created_at: Date;
  updated_at: Date;
}

export const sequenceSource = (id: string) => `sequence:${id}`;

export const toStoredSteps = (steps: CreateSequenceBody['steps']): StoredStep[] =>
  steps.map((s) => ({
    delayMinutes: s.delayMinutes,
    templateId: s.templateId ?? null,
    subject: s.subject ?? null,
    html: s.html ?? null,
    text: s.text ?? null,
  }));

async function toSequences(db: Queryable, tenantId: string, rows: SequenceRow[]): Promise<Sequence[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [stats, states] = await Promise.all([
    mailStats(db, tenantId, ids.map(sequenceSource)),
    db.query<{ sequence_id: string; state: string; n: string }>(
      `SELECT sequence_id, state, count(*) AS n FROM sequence_enrollments
        WHERE tenant_id = $1 AND sequence_id = ANY($2::text[]) GROUP BY sequence_id, state`,
      [tenantId, ids],
    ),
  ]);
  return rows.map((r) => {
    const enrollments = { active: 0, completed: 0, stopped: 0, cancelled: 0 };
    for (const s of states.rows) {
      if (s.sequence_id === r.id) enrollments[s.state as keyof typeof enrollments] = Number(s.n);
    }
    return {
      id: r.id,
      name: r.name,
      from: r.from_address,
      topic: r.topic_id,
      steps: r.steps.map((step, i) => ({
        ...step,
        stats: stats.get(statsKey(sequenceSource(r.id), i)) ?? { ...ZERO_STATS },
      })),
      enrollments,
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
    };
  });
}

export async function insertSequence(
  db: Queryable,
  tenantId: string,
  id: string,
  body: CreateSequenceBody,
  at: Date,
): Promise<Sequence> {
  const { rows } = await db.query<SequenceRow>(
    `INSERT INTO sequences (tenant_id, id, name, from_address, steps, created_at, updated_at, topic_id)
     VALUES ($1, $2, $3, $4, $5, $6, $6, $7) RETURNING id, name, from_address, topic_id, steps, created_at, updated_at`,
    [tenantId, id, body.name, body.from, JSON.stringify(toStoredSteps(body.steps)), at, body.topic ?? null],
  );
  return (await toSequences(db, tenantId, rows))[0]!;
}

export async function getSequence(db: Queryable, tenantId: string, id: string): Promise<Sequence | null> {
  const { rows } = await db.query<SequenceRow>(
    'SELECT id, name, from_address, topic_id, steps, created_at, updated_at FROM sequences WHERE tenant_id = $1 AND id = $2',
    [tenantId, id],
  );
  return rows[0] ? (await toSequences(db, tenantId, rows))[0]! : null;
}

/**
 * `PATCH /sequences/:id`: the given fields; `steps` replaces the list. Enrollments keep their next
 * step's index and due time: a step added after it is sent in turn, one removed is skipped (past
 * the last step an enrollment completes when it falls due).
 */
export async function updateSequence(
  db: Queryable,
  tenantId: string,
  id: string,
  patch: UpdateSequenceBody,
  at: Date,
): Promise<Sequence | null> {
  const { rows } = await db.query<SequenceRow>(
    `UPDATE sequences
        SET name = COALESCE($3, name), from_address = COALESCE($4, from_address),
            steps = COALESCE($5::jsonb, steps), updated_at = $6,
            topic_id = CASE WHEN $7 THEN $8 ELSE topic_id END
      WHERE tenant_id = $1 AND id = $2
      RETURNING id, name, from_address, topic_id, steps, created_at, updated_at`,
    [
      tenantId,
      id,
      patch.name ?? null,
      patch.from ?? null,
      patch.steps === undefined ? null : JSON.stringify(toStoredSteps(patch.steps)),
      at,
      patch.topic !== undefined,
      patch.topic ?? null,
    ],
  );
  return rows[0] ? (await toSequences(db, tenantId, rows))[0]! : null;
}

export async function listSequences(
  db: Queryable,
  tenantId: string,
  page: PageQuery,
): Promise<Page<Sequence>> {
  const { rows, total } = await newestFirstPage<SequenceRow>(
    db,
    { table: 'sequences', columns: 'id, name, from_address, topic_id, steps, created_at, updated_at' },
    tenantId,
    pageWindow(page),
  );
  return { items: await toSequences(db, tenantId, rows), total };
}

interface EnrollmentRow {
  id: string;
  sequence_id: string;
  contact_id: string;
  email: string | null;
  state: Enrollment['state'];
  stop_reason: string | null;
  next_step: number;
  next_due_at: Date | null;
  enrolled_at: Date;
}

const ENROLLMENT_COLUMNS =
  'id, sequence_id, contact_id, state, stop_reason, next_step, next_due_at, enrolled_at';
/** The same columns on `sequence_enrollments e` joined to its contact (`ct`, gone once deleted or erased). */
const ENROLLMENT_JOINED = `e.id, e.sequence_id, e.contact_id, ct.email, e.state, e.stop_reason, e.next_step,
  e.next_due_at, e.enrolled_at`;
const CONTACT_JOIN = 'LEFT JOIN contacts ct ON ct.tenant_id = e.tenant_id AND ct.id = e.contact_id';

const toEnrollment = (r: EnrollmentRow): Enrollment => ({
  id: r.id,
  sequenceId: r.sequence_id,
  contactId: r.contact_id,
  email: r.email,
  state: r.state,
  stopReason: r.stop_reason,
  nextStep: r.next_step,
  nextDueAt: r.next_due_at?.toISOString() ?? null,
  enrolledAt: r.enrolled_at.toISOString(),
});

export type EnrollOutcome =
  | { kind: 'no_sequence' }
  | { kind: 'no_contact' }
  | { kind: 'already_enrolled' }
  | { kind: 'ok'; enrollment: Enrollment };

/** Enrolls the tenant's contact with that address; its first step falls due after the first delay. */
export async function enroll(
  db: Queryable,
  tenantId: string,
  sequenceId: string,
  enrollmentId: string,
  email: string,
  at: Date,
): Promise<EnrollOutcome> {
  const { rows } = await db.query<{ steps: StoredStep[] | null; contact_id: string | null }>(
    `SELECT (SELECT steps FROM sequences WHERE tenant_id = $1 AND id = $2) AS steps,
            (SELECT id FROM contacts WHERE tenant_id = $1 AND email = $3) AS contact_id`,
    [tenantId, sequenceId, email],
  );
  const { steps, contact_id } = rows[0] ?? { steps: null, contact_id: null };
  if (steps === null) return { kind: 'no_sequence' };
  if (contact_id === null) return { kind: 'no_contact' };
  const due = new Date(at.getTime() + steps[0]!.delayMinutes * 60_000);
  const inserted = await db.query<Omit<EnrollmentRow, 'email'>>(
    `INSERT INTO sequence_enrollments (tenant_id, id, sequence_id, contact_id, state, next_step, next_due_at,
                                       enrolled_at, updated_at)
     VALUES ($1, $2, $3, $4, 'active', 0, $5, $6, $6)
     ON CONFLICT (tenant_id, sequence_id, contact_id) WHERE state = 'active' DO NOTHING
     RETURNING ${ENROLLMENT_COLUMNS}`,
    [tenantId, enrollmentId, sequenceId, contact_id, due, at],
  );
  if (!inserted.rows[0]) return { kind: 'already_enrolled' };
  return { kind: 'ok', enrollment: toEnrollment({ ...inserted.rows[0], email }) };
}

/** `DELETE …/enrollments/:id`: an active enrollment stops (`cancelled`); again → true; unknown → false. */
export async function cancelEnrollment(
  db: Queryable,
  tenantId: string,
  sequenceId: string,
  enrollmentId: string,
  at: Date,
): Promise<boolean> {
  const { rows } = await db.query<{ state: string }>(
    `WITH target AS (
       SELECT state FROM sequence_enrollments WHERE tenant_id = $1 AND sequence_id = $2 AND id = $3
     ), changed AS (
       UPDATE sequence_enrollments SET state = 'cancelled', next_due_at = NULL, lease_owner = NULL,
              lease_until = NULL, updated_at = $4
        WHERE tenant_id = $1 AND sequence_id = $2 AND id = $3 AND state = 'active'
       RETURNING state
     )
     SELECT state FROM target`,
    [tenantId, sequenceId, enrollmentId, at],
  );
  return rows.length > 0;
}

/**
 * One page of a sequence's enrollments, newest first (`enrolled_at` desc, then id), optionally of
 * one state; null when the tenant has no such sequence.
 */
export async function listEnrollments(
  db: Queryable,
  tenantId: string,
  sequenceId: string,
  q: PageQuery & { state?: EnrollmentState | undefined },
): Promise<Page<Enrollment> | null> {
  const { limit, offset } = pageWindow(q);
  const state = q.state ?? null;
  const [exists, count, list] = await Promise.all([
    db.query('SELECT 1 FROM sequences WHERE tenant_id = $1 AND id = $2', [tenantId, sequenceId]),
    db.query<{ total: string }>(
      `SELECT count(*) AS total FROM sequence_enrollments
        WHERE tenant_id = $1 AND sequence_id = $2 AND ($3::text IS NULL OR state = $3)`,
      [tenantId, sequenceId, state],
    ),
    db.query<EnrollmentRow>(
      `SELECT ${ENROLLMENT_JOINED} FROM sequence_enrollments e ${CONTACT_JOIN}
        WHERE e.tenant_id = $1 AND e.sequence_id = $2 AND ($3::text IS NULL OR e.state = $3)
        ORDER BY e.enrolled_at DESC, e.id COLLATE "C" DESC LIMIT $4 OFFSET $5::bigint`,
      [tenantId, sequenceId, state, limit, offset],
    ),
  ]);
  if ((exists.rowCount ?? 0) === 0) return null;
  return { items: list.rows.map(toEnrollment), total: Number(count.rows[0]?.total ?? 0) };
}
