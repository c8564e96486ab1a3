import { contactPreferences, savePreferences, unsubscribeAddress } from '@tern/bulk';
import { bindPool, type Repository } from '@tern/jobs';
import type pg from 'pg';

const unsubscribeStatements = {
  unsubscribe: unsubscribeAddress,
  /** The preference page's public topics of an address (SPEC §27), and their save. */
  preferences: contactPreferences,
  savePreferences,
};

/**
 * The unsubscribe repository over one pool (`ApiStores.unsubscribes`): the statement is the
 * contacts' owner's (packages/bulk, `unsubscribeAddress`). The erasure's re-keying of the
 * unsubscribe records (`rekeyErasedUnsubscribes`) runs inside its transaction, on its client.
 */
export type UnsubscribeStore = Repository<typeof unsubscribeStatements>;

export function createUnsubscribeStore(pool: pg.Pool): UnsubscribeStore {
  return bindPool(pool, unsubscribeStatements);
}
