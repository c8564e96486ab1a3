import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DevSecrets {
  jwtSecret: string;
  ingestToken: string;
  trackingSecret: string;
  /** Seals webhook signing secrets (WEBHOOK_SECRETS_KEY). */
  webhookSecretsKey: string;
  /** Wraps the data keys of personal fields and keys recipient hashes (ENCRYPTION_KEY). */
  encryptionKey: string;
}

/**
 * First-run help in development: secrets not given in the environment are generated once and
 * kept in `DATA_DIR/dev-secrets.json` (mode 0600), so tokens printed by the banner stay valid
 * across restarts. Never used in production: there a missing secret is a start-up error.
 */
export function loadOrCreateDevSecrets(dataDir: string): DevSecrets & { created: boolean } {
  const file = join(dataDir, 'dev-secrets.json');
  let existing: Partial<DevSecrets> = {};
  if (existsSync(file)) {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevSecrets>;
    if (
      parsed.jwtSecret &&
      parsed.ingestToken &&
      parsed.trackingSecret &&
      parsed.webhookSecretsKey &&
      parsed.encryptionKey
    ) {
      return {
        jwtSecret: parsed.jwtSecret,
        ingestToken: parsed.ingestToken,
        trackingSecret: parsed.trackingSecret,
        webhookSecretsKey: parsed.webhookSecretsKey,
        encryptionKey: parsed.encryptionKey,
        created: false,
      };
    }
    existing = parsed;
  }
  mkdirSync(dataDir, { recursive: true });
  // A file from before a secret existed keeps the ones it has: printed tokens stay valid.
  const secrets: DevSecrets = {
    jwtSecret: existing.jwtSecret || randomBytes(32).toString('base64url'),
    ingestToken: existing.ingestToken || `ingest_${randomBytes(24).toString('base64url')}`,
    trackingSecret: existing.trackingSecret || randomBytes(32).toString('base64url'),
    webhookSecretsKey: existing.webhookSecretsKey || randomBytes(32).toString('base64url'),
    encryptionKey: existing.encryptionKey || randomBytes(32).toString('base64url'),
  };
  writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  return { ...secrets, created: true };
}
