export * from './app.js';
export * from './ingest-routes.js';
