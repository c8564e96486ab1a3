export * from './events.js';
export * from './http.js';
export * from './ids.js';
export * from './resources.js';
export * from './scopes.js';
export * from './status.js';
export * from './webhooks.js';
