export { eventsOf, type FeedbackTarget, resolveVerp, verpLocalParts } from './feedback.js';
export {
  type BounceMailbox,
  type BounceMailboxOptions,
  createBounceMailbox,
  type MessageOutcome,
} from './mailbox.js';
export {
  type DsnRecipient,
  parseDeliveryStatus,
  parseFeedbackReport,
  parseMime,
  type ReadReport,
  type Report,
  readReport,
  reportOf,
} from './report.js';
