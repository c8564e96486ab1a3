export * from './attachments.js';
export * from './erasure.js';
export { enqueueSends, type NewSend, type StoredMessage, sendsByIdAnyCase } from './outgoing.js';
export * from './sandbox.js';
