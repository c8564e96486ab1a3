export * from './attachments.js';
export * from './erasure.js';
export { enqueueSends, type NewSend, type StoredMessage } from './outgoing.js';
export * from './sandbox.js';
