export * from './secret-box.js';
export * from './signing.js';
export * from './url-guard.js';
