export * from './emails.js';
export * from './events.js';
export * from './http.js';
export * from './ids.js';
export * from './resources.js';
export * from './scopes.js';
export * from './status.js';
