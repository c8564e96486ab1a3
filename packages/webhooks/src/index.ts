export * from './batched.js';
export * from './deliveries.js';
export * from './endpoints.js';
export * from './erasure.js';
export * from './replays.js';
export * from './secret-box.js';
export * from './signing.js';
export * from './url-guard.js';
