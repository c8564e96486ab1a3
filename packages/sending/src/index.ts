export * from './attachments.js';
export { enqueueSends, type NewSend, type StoredMessage } from './outgoing.js';
