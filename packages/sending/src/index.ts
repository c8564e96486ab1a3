export { enqueueSends, type NewSend, type StoredMessage } from './outgoing.js';
