export * from './dispatcher.js';
export * from './http-post.js';
export * from './payload.js';
