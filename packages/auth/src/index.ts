export * from './api-keys.js';
export * from './errors.js';
export * from './jwt.js';
export * from './opens.js';
export * from './redact.js';
export * from './tracking-token.js';
