import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { ProviderName } from './notice.js';

/**
 * Signature tokens the provider routes accepted (`provider_tokens`, migration 0210; issue 40 item
 * 4). Mailgun signs `timestamp` + `token` and not the body: the token is remembered with the hash
 * of its body, so a captured signature re-posted with another body is refused, and the provider's
 * own retry (same token, same body) is not.
 */
export interface UsedTokens {
  /**
   * Records `token` with `body`; answers `false` when the token was accepted before with another
   * body (a replay). Rows older than `keepMs` are deleted on the way (a signature that old is
   * refused for its age before it gets here).
   */
  claim(provider: ProviderName, token: string, body: Buffer, at: Date): Promise<boolean>;
}

const sha256 = (v: string | Buffer) => createHash('sha256').update(v).digest();

export function createUsedTokens(pool: pg.Pool, keepMs: number): UsedTokens {
  let lastPrune = 0;
  return {
    async claim(provider, token, body, at) {
      if (at.getTime() - lastPrune > keepMs / 10) {
        lastPrune = at.getTime();
        await pool.query('DELETE FROM provider_tokens WHERE received_at < $1', [
          new Date(at.getTime() - keepMs),
        ]);
      }
      const bodyHash = sha256(body);
      // Inserted, or the row already there: one statement, so two concurrent replays cannot both win.
      const { rows } = await pool.query<{ body_hash: Buffer }>(
        `WITH ins AS (
           INSERT INTO provider_tokens (provider, token_hash, body_hash, received_at)
           VALUES ($1, $2, $3, $4)
           ON CONFLICT (provider, token_hash) DO NOTHING
           RETURNING body_hash)
         SELECT body_hash FROM ins
         UNION ALL
         SELECT body_hash FROM provider_tokens WHERE provider = $1 AND token_hash = $2
         LIMIT 1`,
        [provider, sha256(token), bodyHash, at],
      );
      const stored = rows[0]?.body_hash;
      return stored?.equals(bodyHash) === true;
    },
  };
}
