// One statement-level contract of an owner package (docs/architecture.md § "Who owns a table"),
// run on both kinds of Postgres Tern runs on: a server (DATABASE_URL, a fresh database of its own)
// and embedded PGlite (`createPostgres` without a URL: one session, reached through `pg`), each
// with Tern's schema migrated. The owners' tests call their statements directly on `db()`.
import { createPostgres, migratePostgres, type PostgresKind } from '@tern/stores';
import type pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import { openLogDatabase } from './log-database.js';
import { tempDir } from './services.js';

export interface OwnerDatabase {
  readonly pool: pg.Pool;
  readonly kind: PostgresKind;
  close(): Promise<void>;
}

/** A migrated database of either kind, dropped (server) or deleted with its directory (PGlite) by `close`. */
export async function openOwnerDatabase(kind: PostgresKind): Promise<OwnerDatabase> {
  if (kind === 'server') {
    const db = await openLogDatabase({ poolMax: 4 });
    return { pool: db.pool, kind, close: () => db.close() };
  }
  const store = await createPostgres({ dataDir: tempDir('tern-owner-pglite-') });
  try {
    await migratePostgres(store.pool);
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return { pool: store.pool, kind, close: () => store.close() };
}

/**
 * Declares `suite` once per kind of Postgres, in a `describe` named after the kind; `db()` is that
 * kind's pool while the suite's tests run. Tenants stay apart by id: the suite's tests share a database.
 */
export function onEveryPostgres(
  name: string,
  suite: (db: () => pg.Pool, kind: PostgresKind) => void,
  kinds: readonly PostgresKind[] = ['server', 'pglite'],
): void {
  for (const kind of kinds) {
    describe(`${name} (${kind})`, () => {
      let opened: OwnerDatabase | undefined;
      beforeAll(async () => {
        opened = await openOwnerDatabase(kind);
      }, 120_000);
      afterAll(async () => {
        await opened?.close();
      });
      suite(() => {
        if (!opened) throw new Error(`the ${kind} database is not open`);
        return opened.pool;
      }, kind);
    });
  }
}
