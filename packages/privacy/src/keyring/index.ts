/**
 * The keyring (SPEC §14): `create.ts` seals and opens under per-recipient data keys and records
 * each email's key (`email_keys`), `data-keys.ts` stores the data keys (`data_keys`), `crypto.ts`
 * holds the cryptography without I/O, `types.ts` the shapes.
 */
export { createKeyring } from './create.js';
export { deriveKeys, firstKeptPeriod, MIN_ENCRYPTION_KEY_BYTES, periodOf } from './crypto.js';
export type {
  EmailSealItem,
  Keyring,
  KeyringOptions,
  OpenItem,
  Sealed,
  SealedBytes,
  SealedFields,
  SealItem,
} from './types.js';
