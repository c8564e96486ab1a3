// The suppression list's statements (SPEC §11, §13; `suppressions`, owned by packages/read-models),
// called directly on a Postgres server and on PGlite: addresses compared lowercased and trimmed,
// an existing entry kept as it is, pages newest first, and the sender's checks (one and many)
// that also refuse an address erased from the tenant (kept only as its keyed hash).
import { expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import {
  addSuppression,
  createSuppressionStore,
  getSuppression,
  insertSuppressionSql,
  isSuppressed,
  listSuppressions,
  removeSuppression,
  suppressedAmong,
  suppressionCheck,
  suppressionCheckMany,
} from '../src/index.js';

const T0 = new Date('2026-05-01T08:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
/** A stand-in for the keyring's keyed hash: deterministic, tenant-bound, case-insensitive. */
const keyring = {
  recipientHash: (tenantId: string, email: string) => `h:${tenantId}:${email.trim().toLowerCase()}`,
};

onEveryPostgres('the suppression statements', (db) => {
  it('adds an address once, lowercased and trimmed; a second add answers the entry unchanged', async () => {
    const T = 'sup-add';
    const first = await addSuppression(
      db(),
      T,
      { email: '  Ann@Example.COM ', reason: 'asked', source: 'manual' },
      T0,
    );
    expect(first).toEqual({
      created: true,
      suppression: {
        email: 'ann@example.com',
        reason: 'asked',
        source: 'manual',
        createdAt: T0.toISOString(),
      },
    });
    const again = await addSuppression(
      db(),
      T,
      { email: 'ANN@example.com', reason: 'other', source: 'bounce' },
      at(9),
    );
    expect(again).toEqual({ created: false, suppression: first.suppression });
    expect(await getSuppression(db(), T, 'ann@EXAMPLE.com')).toEqual(first.suppression);
    expect(await getSuppression(db(), 'sup-add-other', 'ann@example.com')).toBeNull();
    expect(await isSuppressed(db(), T, ' ANN@example.com')).toBe(true);
    expect(await isSuppressed(db(), 'sup-add-other', 'ann@example.com')).toBe(false);
  });

  it('lists newest first, ties by address in byte order, with the tenant’s total; removes once', async () => {
    const T = 'sup-list';
    for (const [email, s] of [
      ['b@example.com', 10],
      ['a@example.com', 10],
      ['old@example.com', 1],
      ['new@example.com', 20],
    ] as const)
      await addSuppression(db(), T, { email, reason: null, source: 'manual' }, at(s));
    await addSuppression(
      db(),
      'sup-list-other',
      { email: 'x@example.com', reason: null, source: 'manual' },
      at(30),
    );

    const page1 = await listSuppressions(db(), T, { page: 1, limit: 3 });
    expect(page1.total).toBe(4);
    expect(page1.items.map((s) => s.email)).toEqual(['new@example.com', 'b@example.com', 'a@example.com']);
    expect((await listSuppressions(db(), T, { page: 2, limit: 3 })).items.map((s) => s.email)).toEqual([
      'old@example.com',
    ]);
    expect(await listSuppressions(db(), T, { page: 2 ** 40, limit: 50 })).toEqual({ items: [], total: 4 });

    expect(await removeSuppression(db(), T, 'B@Example.com')).toBe(true);
    expect(await removeSuppression(db(), T, 'b@example.com')).toBe(false);
    expect(await removeSuppression(db(), T, 'x@example.com')).toBe(false);
    expect((await listSuppressions(db(), T, { page: 1, limit: 10 })).total).toBe(3);
    expect(await isSuppressed(db(), 'sup-list-other', 'x@example.com')).toBe(true);
  });

  it('suppressedAmong answers many (tenant, address) pairs in the order asked', async () => {
    await addSuppression(
      db(),
      'sup-many-a',
      { email: 'one@example.com', reason: null, source: 'manual' },
      T0,
    );
    await addSuppression(
      db(),
      'sup-many-b',
      { email: 'two@example.com', reason: null, source: 'manual' },
      T0,
    );
    expect(
      await suppressedAmong(db(), [
        { tenantId: 'sup-many-a', email: 'ONE@example.com' },
        { tenantId: 'sup-many-a', email: 'two@example.com' },
        { tenantId: 'sup-many-b', email: 'two@example.com' },
        { tenantId: 'sup-many-b', email: 'one@example.com' },
        { tenantId: 'sup-many-a', email: ' one@example.com' },
      ]),
    ).toEqual([true, false, true, false, true]);
    expect(await suppressedAmong(db(), [])).toEqual([]);
  });

  it('the sender’s checks refuse a listed address and one erased from the tenant, no other', async () => {
    const T = 'sup-check';
    await addSuppression(db(), T, { email: 'listed@example.com', reason: null, source: 'manual' }, T0);
    await db().query('INSERT INTO erased_recipients (tenant_id, recipient_hash) VALUES ($1, $2)', [
      T,
      keyring.recipientHash(T, 'gone@example.com'),
    ]);
    const one = suppressionCheck(keyring);
    expect(await one(db(), T, 'Listed@example.com')).toBe(true);
    expect(await one(db(), T, 'gone@example.com')).toBe(true);
    expect(await one(db(), T, 'kept@example.com')).toBe(false);
    expect(await one(db(), 'sup-check-other', 'gone@example.com')).toBe(false);
    const many = suppressionCheckMany(keyring);
    expect(
      await many(db(), [
        { tenantId: T, email: 'kept@example.com' },
        { tenantId: T, email: 'GONE@example.com' },
        { tenantId: 'sup-check-other', email: 'listed@example.com' },
        { tenantId: T, email: 'listed@example.com' },
      ]),
    ).toEqual([false, true, false, true]);
  });

  it('insertSuppressionSql adds an entry in the caller’s statement unless listed, under its WHERE', async () => {
    const T = 'sup-embed';
    const sql = insertSuppressionSql(
      {
        tenantId: '$1',
        email: 'lower($2)',
        reason: "'unsubscribed'",
        source: "'unsubscribe'",
        createdAt: '$3',
      },
      '$4',
    );
    await db().query(sql, [T, 'Embedded@example.com', T0, false]);
    expect(await getSuppression(db(), T, 'embedded@example.com')).toBeNull();
    await db().query(sql, [T, 'Embedded@example.com', T0, true]);
    await db().query(sql, [T, 'embedded@example.com', at(5), true]);
    expect(await getSuppression(db(), T, 'embedded@example.com')).toEqual({
      email: 'embedded@example.com',
      reason: 'unsubscribed',
      source: 'unsubscribe',
      createdAt: T0.toISOString(),
    });
  });

  it('createSuppressionStore binds the same statements to the pool', async () => {
    const store = createSuppressionStore(db());
    const added = await store.add('sup-store', { email: 'S@example.com', reason: 'r', source: 'manual' }, T0);
    expect(added.created).toBe(true);
    expect(await store.isSuppressed('sup-store', 's@example.com')).toBe(true);
    expect((await store.list('sup-store', { page: 1, limit: 5 })).items).toHaveLength(1);
    expect(await store.remove('sup-store', 's@example.com')).toBe(true);
    expect(await store.get('sup-store', 's@example.com')).toBeNull();
  });
});
