export { createDnsChecker, type DnsChecker, type DnsCheckerOptions, type RecordCheck } from './dns-check.js';
export { DKIM_KEY_BITS, type DkimKeyPair, dkimSelector, generateDkimKey } from './keys.js';
export {
  DEFAULT_BOUNCE_SUBDOMAIN,
  DMARC_SUGGESTION,
  type ExpectedRecord,
  expectedRecords,
  type RecordSettings,
  spfRecord,
} from './records.js';
export {
  createSendingDomains,
  type DomainsLogger,
  type KeySealer,
  type SendingDomains,
  type SendingDomainsOptions,
} from './service.js';
export {
  createSigningKeys,
  DkimKeyUnreadableError,
  type SigningKey,
  type SigningKeys,
  unverifiedDomains,
} from './signing.js';
export {
  applyCheck,
  type CheckedDomain,
  type CheckOutcome,
  type CheckSchedule,
  DEFAULT_CHECK_SCHEDULE,
  describeMismatch,
} from './status.js';
