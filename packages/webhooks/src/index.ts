export * from './erasure.js';
export * from './secret-box.js';
export * from './signing.js';
export * from './url-guard.js';
