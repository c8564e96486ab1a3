import type { Keyring } from '@tern/privacy';
import type pg from 'pg';
import type { RawMessage } from './parse.js';
import type { SealedBlob } from './store.js';

/**
 * The raw MIME of a large received message, sealed and stored in parts (docs/inbound.md, "Memory of
 * a large message"; infra/migrations/postgres/0440_inbound_raw_parts.sql). Only this module names
 * `inbound_raw_parts`. A message up to `RAW_PART_BYTES` keeps its raw in its own row as before;
 * a larger one is cut into parts of that size, each sealed on its own (AES-256-GCM under the
 * sender's data key, label `raw.<n>`, so parts cannot be swapped) and inserted in its own
 * statement before the message's row, which records how many there are (`raw_parts`). So neither
 * the sealed whole nor the driver's copies of it ever exist: at most one part at a time.
 */

/** Bytes of one part (the last may be shorter). */
export const RAW_PART_BYTES = 1024 * 1024;

type Db = pg.Pool | pg.ClientBase;

export const rawPartLabel = (n: number) => `raw.${n}`;

/** Bytes `[start, end)` of the chunks, copied into one Buffer. */
function slice(raw: RawMessage, start: number, end: number): Buffer {
  const out = Buffer.allocUnsafe(end - start);
  let base = 0;
  let written = 0;
  for (const chunk of raw.chunks) {
    const chunkEnd = base + chunk.length;
    if (chunkEnd > start && base < end) {
      const from = Math.max(start - base, 0);
      const to = Math.min(end - base, chunk.length);
      written += chunk.copy(out, written, from, to);
    }
    base = chunkEnd;
    if (base >= end) break;
  }
  return out;
}

/**
 * Seals the message in parts of `partBytes` and inserts each (one statement per part); answers
 * how many. A part already there (the same id written again) is replaced.
 */
export async function writeRawParts(
  db: Db,
  raw: RawMessage,
  partBytes: number,
  seal: (label: string, data: Buffer) => Promise<SealedBlob>,
  inboundId: string,
): Promise<number> {
  let n = 0;
  for (let start = 0; start < raw.size; start += partBytes, n++) {
    const sealed = await seal(rawPartLabel(n), slice(raw, start, Math.min(start + partBytes, raw.size)));
    await db.query({
      name: 'inbound_raw_part_insert',
      text: `INSERT INTO inbound_raw_parts (inbound_id, part, iv, tag, ct) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (inbound_id, part) DO UPDATE SET iv = EXCLUDED.iv, tag = EXCLUDED.tag, ct = EXCLUDED.ct`,
      values: [inboundId, n, sealed.iv, sealed.tag, sealed.ct],
    });
  }
  return n;
}

/** Deletes the parts of a message (an arrival found to be a duplicate: its parts are not needed). */
export async function deleteRawParts(db: Db, inboundId: string): Promise<void> {
  await db.query('DELETE FROM inbound_raw_parts WHERE inbound_id = $1', [inboundId]);
}

/**
 * Deletes parts written before `before` whose message row never came (a crash, or a failure,
 * between the parts and the row); answers how many. A row deleted later takes its parts with it
 * (the trigger of migration 0440).
 */
export async function deleteOrphanRawParts(db: Db, before: Date): Promise<number> {
  const result = await db.query(
    `DELETE FROM inbound_raw_parts p WHERE p.created_at < $1
       AND NOT EXISTS (SELECT 1 FROM inbound_messages m WHERE m.id = p.inbound_id)`,
    [before],
  );
  return result.rowCount ?? 0;
}

/** What opening a stored raw message needs of its row. */
export interface RawOfRow {
  id: string;
  tenantId: string;
  fromHash: string;
  period: string;
  rawParts: number;
  raw?: SealedBlob | undefined;
}

/**
 * The raw MIME of a stored message, opened: from its row, or from its parts in order. Null when
 * the key is gone (erased, past retention), a part is missing or altered, or the raw was not read.
 */
export async function openRaw(
  db: Db,
  keyring: Pick<Keyring, 'openBytes'>,
  m: RawOfRow,
): Promise<Buffer | null> {
  const open = (label: string, blob: SealedBlob) =>
    keyring.openBytes(m.tenantId, m.id, label, { rh: m.fromHash, p: m.period, ...blob });
  if (m.rawParts === 0) return m.raw ? open('raw', m.raw) : null;
  const { rows } = await db.query<{ part: number; iv: Buffer; tag: Buffer; ct: Buffer }>({
    name: 'inbound_raw_parts_of',
    text: 'SELECT part, iv, tag, ct FROM inbound_raw_parts WHERE inbound_id = $1 ORDER BY part',
    values: [m.id],
  });
  if (rows.length !== m.rawParts) return null;
  const parts: Buffer[] = [];
  for (const [n, row] of rows.entries()) {
    if (row.part !== n) return null;
    const clear = await open(rawPartLabel(n), row);
    if (!clear) return null;
    parts.push(clear);
  }
  return Buffer.concat(parts);
}
