export { erasedRecipientSql, isErased, recordErasure } from './erasure-record.js';
export {
  createKeyring,
  deriveKeys,
  type EmailSealItem,
  firstKeptPeriod,
  type Keyring,
  type KeyringOptions,
  MIN_ENCRYPTION_KEY_BYTES,
  type OpenItem,
  periodOf,
  type Sealed,
  type SealedBytes,
  type SealedFields,
  type SealItem,
} from './keyring/index.js';
export {
  hasRecipients,
  mentionPattern,
  SCRUB_SPEC,
  scrubbedData,
  withoutCopies,
  withoutMentions,
} from './scrub.js';
export { createSealer, SEALED_FIELDS, sealedEventStream } from './sealer.js';
