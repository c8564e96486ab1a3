export * from './analytics.js';
export * from './email-fold.js';
export * from './time.js';
export * from './unsubscribe.js';
