// The segment builder's conditions as data: a filter made of them (`filterOf`), and back
// (`clausesOf`) when the form can write the filter.
import type { SegmentFilter } from '../types.js';

export const KINDS = {
  property: 'Property',
  audience: 'In audience',
  topic: 'Subscribed to topic',
  engagement: 'Engagement in the last days',
  tag: 'Got mail tagged',
  campaign: 'Got mail of campaign',
} as const;
export type Kind = keyof typeof KINDS;
export const OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'contains', 'exists'] as const;
export const ENGAGEMENTS = ['opened', 'clicked', 'bounced', 'received'] as const;

export interface Clause {
  kind: Kind;
  not: boolean;
  /** The property, audience, topic id, tag or campaign id; the engagement kind. */
  subject: string;
  op: (typeof OPS)[number];
  value: string;
  days: string;
}

export const emptyClause = (): Clause => ({
  kind: 'property',
  not: false,
  subject: '',
  op: 'eq',
  value: '',
  days: '30',
});

/** One clause as the API's filter, with the property's value of its type. */
function clauseFilter(c: Clause, types: ReadonlyMap<string, string>): SegmentFilter {
  let f: SegmentFilter;
  if (c.kind === 'property') {
    const type = types.get(c.subject);
    const value =
      type === 'number' ? Number(c.value) : type === 'boolean' ? c.value === 'true' : c.value.trim();
    f = { property: c.subject, op: c.op, ...(c.op === 'exists' ? {} : { value }) };
  } else if (c.kind === 'engagement') f = { engagement: c.subject || 'opened', days: Number(c.days) };
  else f = { [c.kind]: c.subject.trim() };
  return c.not ? { not: f } : f;
}

/** Whether a clause says enough to be asked about (no request for a half-written condition). */
function complete(c: Clause): boolean {
  if (c.kind === 'engagement') return Number(c.days) >= 1;
  if (c.subject.trim() === '') return false;
  return c.kind !== 'property' || c.op === 'exists' || c.value.trim() !== '';
}

/**
 * The filter of the clauses: one clause as is, several under `and` (all) or `or` (any); null while
 * there is none or one is not complete.
 */
export function filterOf(
  clauses: readonly Clause[],
  match: 'and' | 'or',
  types: ReadonlyMap<string, string>,
): SegmentFilter | null {
  if (clauses.length === 0 || !clauses.every(complete)) return null;
  const parts = clauses.map((c) => clauseFilter(c, types));
  return parts.length === 1 ? parts[0]! : { [match]: parts };
}

/** The conditions of a filter the form writes, or why the form cannot write it (a sentence). */
export type ReadFilter = { clauses: Clause[]; match: 'and' | 'or' } | { reason: string };

const NESTED = 'This filter nests groups: edit it as JSON.';
const GROUPS = ['and', 'or', 'not'];

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isGroup = (v: unknown) => isObject(v) && GROUPS.some((g) => g in v);
/** A subject as the form writes it back (trimmed, not empty). */
const subject = (v: unknown): v is string => typeof v === 'string' && v.trim() === v && v !== '';
const keysAre = (f: Record<string, unknown>, ...keys: string[]) =>
  Object.keys(f).every((k) => keys.includes(k));

/**
 * The clause of one condition (no group), or null when the form would write it otherwise. A
 * property's value is taken to be of the property's type (the API checks it on every write):
 * the form turns the text back into a number or a boolean by that type.
 */
function leafClause(f: Record<string, unknown>): Clause | null {
  const base = emptyClause();
  if ('property' in f) {
    const { property, op, value } = f;
    if (!keysAre(f, 'property', 'op', 'value') || typeof property !== 'string' || property.trim() === '')
      return null;
    if (!(OPS as readonly unknown[]).includes(op)) return null;
    const c = { ...base, subject: property, op: op as Clause['op'] };
    if (op === 'exists') return 'value' in f ? null : c;
    if (typeof value === 'string') return subject(value) ? { ...c, value } : null;
    if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value)))
      return { ...c, value: String(value) };
    return null;
  }
  if ('engagement' in f) {
    const { engagement, days } = f;
    if (!keysAre(f, 'engagement', 'days') || !(ENGAGEMENTS as readonly unknown[]).includes(engagement))
      return null;
    if (typeof days !== 'number' || !Number.isFinite(days) || days < 1) return null;
    return { ...base, kind: 'engagement', subject: engagement as string, days: String(days) };
  }
  const kind = (['audience', 'topic', 'tag', 'campaign'] as const).find((k) => k in f);
  if (kind === undefined || !keysAre(f, kind) || !subject(f[kind])) return null;
  return { ...base, kind, subject: f[kind] };
}

/** One condition of the form, possibly negated; or why not. */
function readClause(f: unknown): Clause | { reason: string } {
  if (!isObject(f)) return { reason: 'This filter has a condition that is not an object: edit it as JSON.' };
  let leaf = f;
  let not = false;
  if ('not' in f) {
    if (!keysAre(f, 'not') || !isObject(f.not) || isGroup(f.not)) return { reason: NESTED };
    leaf = f.not;
    not = true;
  } else if (isGroup(f)) return { reason: NESTED };
  const c = leafClause(leaf);
  return c === null
    ? { reason: `The form cannot write the condition ${JSON.stringify(leaf)}: edit it as JSON.` }
    : { ...c, not };
}

/**
 * The inverse of `filterOf`: the conditions and how they combine when the filter is one the form
 * writes (one condition, or `and`/`or` of two or more, each possibly under `not`), so that
 * `filterOf(clauses, match, types)` gives the filter back; otherwise why not.
 */
export function readFilter(filter: SegmentFilter): ReadFilter {
  if (!isObject(filter)) return { reason: 'This filter is not an object: edit it as JSON.' };
  const group = (['and', 'or'] as const).find((m) => m in filter);
  if (group === undefined) {
    const c = readClause(filter);
    return 'reason' in c ? c : { clauses: [c], match: 'and' };
  }
  const parts = filter[group];
  if (!keysAre(filter, group) || !Array.isArray(parts))
    return { reason: `This filter has more than a group of conditions: edit it as JSON.` };
  const clauses: Clause[] = [];
  for (const part of parts) {
    const c = readClause(part);
    if ('reason' in c) return c;
    clauses.push(c);
  }
  if (clauses.length < 2)
    return {
      reason: `This filter is a group of ${clauses.length === 0 ? 'no' : 'one'} condition: edit it as JSON.`,
    };
  return { clauses, match: group };
}

/** `readFilter`'s conditions, or null when the form cannot write the filter. */
export function clausesOf(filter: SegmentFilter): { clauses: Clause[]; match: 'and' | 'or' } | null {
  const read = readFilter(filter);
  return 'reason' in read ? null : read;
}
