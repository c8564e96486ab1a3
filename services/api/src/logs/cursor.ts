import type { LogsCursor } from '@tern/read-models';
import { z } from 'zod';

/**
 * The opaque `cursor` of `GET /emails/logs` (SPEC §19): the position after the last entry of a
 * page — its `createdAt` at Postgres' microsecond precision (UTC, no zone) and its id — and the
 * number of the page it opens, so `meta.page` stays meaningful. base64url JSON: opaque to clients,
 * checked on the way back in (a malformed cursor is a 400, never a 500). Filters are not in it:
 * the client sends the same filters with the cursor, as with `page`.
 */
export type { LogsCursor };

const wireSchema = z.strictObject({
  v: z.literal(1),
  t: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/),
  i: z.string().min(1).max(128),
  p: z.number().int().min(2).max(Number.MAX_SAFE_INTEGER),
});

export function encodeLogsCursor(cursor: LogsCursor): string {
  return Buffer.from(JSON.stringify({ v: 1, t: cursor.createdAt, i: cursor.id, p: cursor.page })).toString(
    'base64url',
  );
}

/** The cursor, or null when it is not one this server issued. */
export function decodeLogsCursor(value: string): LogsCursor | null {
  if (value.length === 0 || value.length > 512 || !/^[A-Za-z0-9_-]+$/.test(value)) return null;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  const parsed = wireSchema.safeParse(json);
  if (!parsed.success) return null;
  if (Number.isNaN(Date.parse(`${parsed.data.t}Z`))) return null;
  return { createdAt: parsed.data.t, id: parsed.data.i, page: parsed.data.p };
}
