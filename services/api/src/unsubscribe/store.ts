import { unsubscribeAddress } from '@tern/bulk';
import { bindPool, type PoolBound } from '@tern/jobs';
import type pg from 'pg';

/**
 * The unsubscribe repository over one pool (`ApiStores.unsubscribes`): the statement is the
 * contacts' owner's (packages/bulk, `unsubscribeAddress`). The erasure's re-keying of the
 * unsubscribe records (`rekeyErasedUnsubscribes`) runs inside its transaction, on its client.
 */
export interface UnsubscribeStore {
  unsubscribe: PoolBound<typeof unsubscribeAddress>;
}

export function createUnsubscribeStore(pool: pg.Pool): UnsubscribeStore {
  return bindPool(pool, { unsubscribe: unsubscribeAddress });
}
