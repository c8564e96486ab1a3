export {
  createKeyring,
  deriveKeys,
  firstKeptPeriod,
  type Keyring,
  type KeyringOptions,
  MIN_ENCRYPTION_KEY_BYTES,
  type OpenItem,
  periodOf,
  type Sealed,
  type SealedFields,
  type SealItem,
} from './keyring.js';
export { openRecords, SEALED_FIELDS, sealingEventLog, sealRecord, sealRecords } from './sealing-log.js';
