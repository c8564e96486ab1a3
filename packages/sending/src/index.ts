export * from './attachments.js';
export * from './due-list-store.js';
export { enqueueSends, type NewSend, type StoredMessage, sendsByIdAnyCase } from './enqueue.js';
export * from './erasure.js';
export * from './idempotency-keys.js';
export * from './sandbox.js';
export * from './send-controls.js';
export * from './send-detail.js';
