export { createDnsChecker, type DnsChecker, type RecordCheck } from './dns-check.js';
export { type RecordSettings, spfRecord } from './records.js';
export { createSendingDomains, type KeySealer, type SendingDomains } from './service.js';
export {
  createSigningKeys,
  DkimKeyUnreadableError,
  isVerifiedBounceHost,
  type SigningKey,
  type SigningKeys,
  unverifiedDomains,
} from './signing.js';
export { applyCheck, type CheckedDomain, type CheckSchedule, DEFAULT_CHECK_SCHEDULE } from './status.js';
export { receivingTenants, verifiedDomainNames } from './store.js';
export {
  parseVerpLocalPart,
  VERP_MAX_RECIPIENT_INDEX,
  verpAddress,
  verpMac,
  verpMatches,
} from './verp.js';
