export { type ArrivalFacts, type DnsResolve, dnsResolverOf, verdictsOf } from './auth.js';
export { completeStored, type ReceivedMessage } from './complete.js';
export {
  createDmarcConsumer,
  type DmarcOutcome,
  type DmarcSource,
  type DmarcSummary,
  dmarcSummary,
  expireDmarc,
} from './dmarc.js';
export {
  DMARC_LIMITS,
  type DmarcLimits,
  DmarcRejected,
  type DmarcReport,
  looksLikeDmarcReport,
  parseDmarcReport,
} from './dmarc-parse.js';
export {
  FORWARDED_HEADER,
  type ForwardAttachment,
  type ForwardRequest,
  type ForwardSender,
  forwardEmailId,
} from './forward.js';
export { createInboundListener, type InboundListener, type InboundListenerOptions } from './listener.js';
export { attachmentKept, KEEP_ATTACHMENT_BYTES, type RawMessage } from './parse.js';
export { parsedFields } from './parse-fields.js';
export { parseSimple } from './parse-simple.js';
export { parseStreamed } from './parse-store.js';
export { RAW_PART_BYTES } from './raw-parts.js';
export {
  createInboundReader,
  decodeInboundCursor,
  encodeInboundCursor,
  type InboundPage,
  type InboundReader,
  type InboundReaderOptions,
} from './reader.js';
export {
  type Envelope,
  newInboundId,
  type ReceiveDeps,
  receiveMessage,
} from './receive.js';
export { createRecipientResolver } from './recipients.js';
export {
  type CreateRouteBody,
  createRouteBodySchema,
  deleteRoute,
  firstMatch,
  type InboundRoute,
  insertRoute,
  listRoutes,
  type RouteAction,
  updateRoute,
} from './routes.js';
export {
  ensureInboundAddress,
  eraseInbound,
  expireInbound,
  getInbound,
  inboundSlug,
  inboundTenantOf,
  listInbound,
  repliesTo,
  type SealedBlob,
  type StoredInbound,
  tenantOfSlug,
} from './store.js';
export {
  createInboundSweeper,
  DEFAULT_SWEEP_GRACE_MS,
  type InboundSweeper,
  type InboundSweeperOptions,
  type InboundSweepResult,
} from './sweeper.js';
