export * from './analytics.js';
export * from './email-fold.js';
export * from './events.js';
export * from './fold-batch.js';
export * from './recipients.js';
export * from './render.js';
export * from './time.js';
export * from './unsubscribe.js';
