import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DevSecrets {
  jwtSecret: string;
  ingestToken: string;
  /** HMAC key of tracking tokens (SPEC §2: dev: generated and kept). */
  trackingSecret: string;
}

const generators: { [K in keyof DevSecrets]: () => string } = {
  jwtSecret: () => randomBytes(32).toString('base64url'),
  ingestToken: () => `ingest_${randomBytes(24).toString('base64url')}`,
  trackingSecret: () => randomBytes(32).toString('base64url'),
};

/**
 * First-run help in development: secrets not given in the environment are generated once and
 * kept in `DATA_DIR/dev-secrets.json` (mode 0600), so tokens printed by the banner (and tracking
 * links in sent mail) stay valid across restarts. A file from an older version that lacks a
 * secret gets it added; the ones it has are kept. Never used in production: there a missing
 * secret is a start-up error.
 */
export function loadOrCreateDevSecrets(dataDir: string): DevSecrets & { created: boolean } {
  const file = join(dataDir, 'dev-secrets.json');
  const existing: Partial<DevSecrets> = existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as Partial<DevSecrets>)
    : {};
  const secrets = {} as DevSecrets;
  let created = false;
  for (const key of Object.keys(generators) as (keyof DevSecrets)[]) {
    const value = existing[key];
    if (typeof value === 'string' && value !== '') secrets[key] = value;
    else {
      secrets[key] = generators[key]();
      created = true;
    }
  }
  if (created) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  }
  return { ...secrets, created };
}
